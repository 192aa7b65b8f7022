"""PrismStore, LangGraph's BaseStore on prism-memory: behaviour on both backends, and a differential run against
LangGraph's own InMemoryStore with the same embedding function."""

from __future__ import annotations

import json
import math
import random
from datetime import datetime, timedelta, timezone

import pytest
from langgraph.store.base import InvalidNamespaceError, PutOp
from langgraph.store.memory import InMemoryStore
from langgraph_stores import INDEX, make_store  # noqa: F401 (a fixture)

from prism_memory import PrismMemoryError
from prism_memory.integrations.langgraph import PrismStore


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now


@pytest.mark.parametrize("resource_label", [None, 1])
async def test_exact_namespace_segments_isolate_lookalikes(make_store, resource_label):
    store = make_store(resource_label=resource_label)
    for user in ("user_1", "user-1", "user_10"):
        await store.aput(("memories", user), "pref", {"text": f"tea for {user}", "owner": user})
    assert (await store.aget(("memories", "user_1"), "pref")).value == {"text": "tea for user_1", "owner": "user_1"}
    for query in (None, "tea"):
        hits = await store.asearch(("memories", "user_1"), query=query, limit=10)
        assert [(tuple(hit.namespace), hit.value["owner"]) for hit in hits] == [(("memories", "user_1"), "user_1")]
        assert (hits[0].score is None) == (query is None)
    assert await store.alist_namespaces(prefix=("memories", "user_1")) == [("memories", "user_1")]
    if resource_label is None:
        assert await store.alist_namespaces(prefix=("memories",)) == [
            ("memories", "user-1"), ("memories", "user_1"), ("memories", "user_10")]
    else:  # one resource per user: a prefix that does not name the user reads nothing across resources
        for call in (store.alist_namespaces(prefix=("memories",)), store.asearch(("memories",), query="tea"),
                     store.asearch(("memories", "*"))):
            with pytest.raises(InvalidNamespaceError):
                await call
        with pytest.raises(InvalidNamespaceError):
            await store.aput(("memories",), "k", {"text": "no user label"})


async def test_value_round_trips_and_put_replaces(make_store):
    store = make_store()
    value = {"text": "nested", "list": [1, 2.5, "x", None, True], "deep": {"a": {"b": ["c"]}}, "ünï": "✓"}
    await store.aput(("docs",), "k", value)
    assert (await store.aget(("docs",), "k")).value == value
    await store.aput(("docs",), "k", {"text": "replaced"})
    item = await store.aget(("docs",), "k")
    assert item.value == {"text": "replaced"}
    assert [hit.key for hit in await store.asearch(("docs",), query="nested")] == ["k"]  # one item, its new text
    assert (await store.asearch(("docs",), query="replaced"))[0].value == {"text": "replaced"}


async def test_delete_is_a_forget_and_the_key_can_be_written_again(make_store):
    store = make_store()
    await store.aput(("docs",), "k", {"text": "first"})
    await store.adelete(("docs",), "k")
    assert await store.aget(("docs",), "k") is None
    assert await store.asearch(("docs",), query="first") == []
    await store.aput(("docs",), "k", {"text": "second"})
    assert (await store.aget(("docs",), "k")).value == {"text": "second"}


async def test_filters_limit_and_offset_are_exact(make_store):
    store = make_store()
    for n in range(12):
        await store.aput(("items", f"g{n % 2}"), f"k{n:02}", {"text": f"item number {n}", "n": n, "kind": "even" if n % 2 == 0 else "odd"})
    cases = [({"kind": "even"}, {0, 2, 4, 6, 8, 10}), ({"n": {"$gte": 3, "$lt": 7}}, {3, 4, 5, 6}),
             ({"n": {"$ne": 5}, "kind": {"$eq": "odd"}}, {1, 3, 7, 9, 11}), ({"n": {"$gt": 10}}, {11}),
             ({"n": {"$lte": 0}}, {0})]
    for filter, wanted in cases:
        for query in (None, "item number"):
            hits = await store.asearch(("items",), query=query, filter=filter, limit=3)
            assert len(hits) == min(3, len(wanted))
            paged = []
            for offset in range(0, 12, 3):
                paged += await store.asearch(("items",), query=query, filter=filter, limit=3, offset=offset)
            assert sorted(hit.value["n"] for hit in paged) == sorted(wanted)


async def test_ttl_expires_at_read_time_and_refreshes_on_read(make_store):
    clock = Clock()
    store = make_store(clock=clock, ttl={"default_ttl": 10, "refresh_on_read": True})
    await store.aput(("s",), "short", {"text": "short lived"})
    await store.aput(("s",), "long", {"text": "long lived"}, ttl=60)
    await store.aput(("s",), "still", {"text": "never read"}, ttl=20)
    clock.now += timedelta(minutes=8)
    assert await store.aget(("s",), "short") is not None  # read at minute 8: lives until minute 18
    clock.now += timedelta(minutes=7)
    assert (await store.aget(("s",), "short", refresh_ttl=False)) is not None
    clock.now += timedelta(minutes=6)  # minute 21
    assert await store.aget(("s",), "short") is None
    assert {hit.key for hit in await store.asearch(("s",))} == {"long"}
    assert {hit.key for hit in await store.asearch(("s",), query="lived never")} == {"long"}
    assert await store.alist_namespaces() == [("s",)]


async def test_consent_and_lineage_through_the_reserved_key(make_store):
    store = make_store()
    await store.aput(("facts",), "src", {"text": "Ada lives in Lisbon"})
    await store.aput(("facts",), "derived", {"text": "Ada is in Portugal",
                                            "__prism__": {"lineage": {"source_ids": ["src"], "reason": "inferred"}}})
    await store.aput(("facts",), "private", {"text": "Ada private note",
                                            "__prism__": {"consent": {"scope": "thread"}}})
    assert (await store.aget(("facts",), "derived")).value == {"text": "Ada is in Portugal"}
    # a thread-scoped consent keeps the item in its namespace: search across namespaces does not reach it
    assert "private" not in {hit.key for hit in await store.asearch(("facts",), query="Ada note", limit=10)}
    assert (await store.aget(("facts",), "private")).value == {"text": "Ada private note"}
    await store.adelete(("facts",), "src")  # the derived item follows its source
    assert await store.aget(("facts",), "derived") is None


@pytest.mark.parametrize("namespace", [(), ("",), ("a", 1), ("langgraph", "x"), ("a.b",), ("x/agent:y",)])
async def test_bad_namespaces_raise_langgraphs_error(make_store, namespace):
    store = make_store()
    with pytest.raises(InvalidNamespaceError):
        await store.abatch([PutOp(namespace, "k", {"text": "x"})])
    assert await store.asearch(()) == []


@pytest.mark.parametrize("value", [{"x": math.nan}, {"x": {1, 2}}, {"x": object()}, ["not", "a", "dict"],
                                   {"text": "x" * (2 * 1024 * 1024)}])
async def test_bad_values_raise_and_write_nothing(make_store, value):
    store = make_store()
    with pytest.raises(PrismMemoryError):
        await store.aput(("ns",), "k", value)
    assert await store.asearch(()) == []


async def test_differential_against_langgraphs_in_memory_store(make_store):
    """Random puts, gets, deletes, searches and listings on both stores; same answers.

    Compared exactly: gets, listings of namespaces, and how many items a search returns (min(limit, matches)).
    Compared by set: what a search returns when its limit reaches every match. The order of a search differs
    legitimately: a listing without a query is in (namespace thread, sequence, key) order here and insertion
    order in InMemoryStore, and a query's score adds a lexical leg to the cosine similarity. TTLs are not in the
    sequence: InMemoryStore does not support them (``supports_ttl`` is false); the TTL test above covers them."""
    rng = random.Random(31)
    prism = make_store()
    reference = InMemoryStore(index=INDEX)
    namespaces = [("memories", u) for u in ("user_1", "user-1", "user_10")] + [("memories", "user_1", "notes"), ("docs",)]
    words = ["tea", "coffee", "lisbon", "porto", "music", "chess", "rain", "sun"]
    for step in range(150):
        action = rng.choice(["put", "put", "put", "get", "delete", "search", "search", "list"])
        namespace = rng.choice(namespaces)
        key = f"k{rng.randrange(6)}"
        if action == "put":
            value = {"text": " ".join(rng.sample(words, 3)), "n": rng.randrange(10), "tag": rng.choice(["a", "b"])}
            await prism.aput(namespace, key, value)
            reference.put(namespace, key, value)
        elif action == "delete":
            await prism.adelete(namespace, key)
            reference.delete(namespace, key)
        elif action == "get":
            got, want = await prism.aget(namespace, key), reference.get(namespace, key)
            assert (got and got.value) == (want and want.value), step
        elif action == "list":
            prefix = namespace[: rng.randrange(len(namespace) + 1)]
            depth = rng.choice([None, 1, 2])
            assert await prism.alist_namespaces(prefix=prefix or None, max_depth=depth) == \
                reference.list_namespaces(prefix=prefix or None, max_depth=depth), step
        else:
            prefix = namespace[: rng.randrange(len(namespace) + 1)]
            filter = rng.choice([None, {"tag": "a"}, {"n": {"$gte": 5}}, {"n": {"$ne": 3}, "tag": {"$eq": "b"}}])
            query = rng.choice([None, " ".join(rng.sample(words, 2))])
            limit, offset = rng.choice([(3, 0), (3, 2), (32, 0)])
            got = await prism.asearch(prefix, query=query, filter=filter, limit=limit, offset=offset)
            want = reference.search(prefix, query=query, filter=filter, limit=limit, offset=offset)
            assert len(got) == len(want), step
            if limit == 32:
                assert {(tuple(h.namespace), h.key, json.dumps(h.value, sort_keys=True)) for h in got} == \
                    {(tuple(h.namespace), h.key, json.dumps(h.value, sort_keys=True)) for h in want}, step
            assert all((hit.score is None) == (query is None) for hit in got), step


async def test_lookalike_tenants_and_resources_stay_apart(make_store):
    stores = {(tenant, resource): make_store(tenant_id=tenant, resource_id=resource)
              for tenant in ("acme", "acme-corp") for resource in ("user_1", "user-1")}
    for (tenant, resource), store in stores.items():
        await store.aput(("memories",), "k", {"text": f"tea of {tenant} {resource}"})
    for (tenant, resource), store in stores.items():
        hits = await store.asearch(("memories",), query="tea of", limit=10)
        assert [hit.value["text"] for hit in hits] == [f"tea of {tenant} {resource}"]
        assert (await store.aget(("memories",), "k")).value == {"text": f"tea of {tenant} {resource}"}


async def test_a_store_on_a_memory_with_a_thread_uses_its_whole_resource(make_store):
    base = make_store()
    store = PrismStore(base.memory.for_thread("some-thread"), index=INDEX)
    await store.aput(("a",), "k", {"text": "x"})
    assert [hit.key for hit in await store.asearch(())] == ["k"]
    assert [hit.key for hit in await base.asearch(())] == ["k"]


def test_a_store_made_outside_an_event_loop_says_where_to_make_it():
    """LangGraph's batched store needs a running loop: outside one, a typed error that says what to do, and no
    stray error from the half-made store's finaliser."""
    import gc
    import sys

    from prism_memory import ConfigurationError, create_hash_embedder, create_memory

    memory = create_memory(tenant_id="acme", resource_id="user_1", embedder=create_hash_embedder(8))
    stray, hook = [], sys.unraisablehook
    sys.unraisablehook = stray.append
    try:
        with pytest.raises(ConfigurationError, match="running event loop.*to_thread"):
            PrismStore(memory)
        gc.collect()
    finally:
        sys.unraisablehook = hook
    assert stray == []
