"""Parent-to-child share grants on both backends: who can read what, and when."""

from datetime import datetime, timedelta, timezone

import pytest
from prism_memory import InvalidEntryError, InvalidScopeError, LimitExceededError, MemoryConsent

from parity import Clock, Raised

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)



PARENT_ENTRIES = [
    {"id": "p1", "text": "parent plan alpha", "consent": MemoryConsent()},
    {"id": "p2", "text": "parent plan beta", "consent": MemoryConsent()},
    {"id": "p3", "text": "parent plan gamma secret"},
]


async def readers(backend, clock):
    """The parent thread, its child, a sibling, the child of a derived resource, and another tenant."""
    parent = backend.memory(thread_id="parent", clock=clock)
    await parent.remember(PARENT_ENTRIES, wait=True)
    child = backend.memory(thread_id="child", clock=clock)
    await child.remember([{"id": "c1", "text": "child plan notes"}], wait=True)
    return {
        "parent": parent,
        "child": child,
        "sibling": backend.memory(thread_id="sibling", clock=clock),
        "derived": parent.child("agent-1"),  # a delegated agent: resource user-ada/agent:agent-1
        "tenant": backend.memory(tenant_id="t2", thread_id="child", clock=clock),
    }


async def visible(memories):
    return {
        name: sorted(f"{hit.thread_id}:{hit.id}" for hit in (await memory.recall(
            "parent plan", top_k=32, message_range=4, share_from_parent_thread_id="parent")).hits)
        for name, memory in memories.items()
        if name != "parent"
    }


async def test_share_grant_matrix(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memories = await readers(backend, clock)
        parent = memories["parent"]
        states = {"before": await visible(memories)}
        assert await parent.share_with("child", ["p1", "p3"], expires_at=T0 + timedelta(hours=1)) == 2
        derived = memories["derived"].config.scope
        assert await parent.share_with(derived.thread_id, ["p2"], child_resource_id=derived.resource_id) == 1
        states["granted"] = await visible(memories)
        states["parent_own"] = sorted(hit.id for hit in (await parent.recall("plan", top_k=32)).hits)
        states["without_flag"] = sorted(hit.id for hit in (await memories["child"].recall("plan", top_k=32)).hits)
        await parent.set_consent("p1", visible=False)
        states["after_revoking_p1"] = await visible(memories)
        clock.now = T0 + timedelta(hours=1)
        states["expired"] = await visible(memories)
        await parent.revoke_share(derived.thread_id, child_resource_id=derived.resource_id)
        states["revoked"] = await visible(memories)
        return states

    states = await backends.run(scenario)
    nobody = {"child": ["child:c1"], "sibling": [], "derived": [], "tenant": []}
    assert states["before"] == nobody
    assert states["granted"] == {
        "child": ["child:c1", "parent:p1", "parent:p3"],
        "sibling": [],
        "derived": ["parent:p2"],
        "tenant": [],
    }
    assert states["parent_own"] == ["p1", "p2", "p3"]
    assert states["without_flag"] == ["c1"]
    assert states["after_revoking_p1"]["child"] == ["child:c1", "parent:p3"]
    assert states["expired"] == {**nobody, "derived": ["parent:p2"]}
    assert states["revoked"] == nobody


async def test_shared_hits_never_pull_unshared_neighbours(backends):
    async def scenario(backend):
        parent = backend.memory(thread_id="parent")
        await parent.remember([{"id": f"n{i}", "text": f"neighbour note {i}", "sequence": i} for i in range(1, 6)], wait=True)
        await parent.share_with("child", ["n3"])
        result = await backend.memory(thread_id="child").recall(
            "neighbour note 3", top_k=5, message_range=4, share_from_parent_thread_id="parent")
        return [hit.id for hit in result.hits], [entry.id for entry in result.adjacent]

    assert await backends.run(scenario) == [["n3"], []]


async def test_an_empty_list_revokes_and_bad_grants_are_refused(backends):
    async def scenario(backend):
        parent = backend.memory(thread_id="parent")
        await parent.remember(PARENT_ENTRIES, wait=True)
        await parent.share_with("child", ["p1"])
        revoked = await parent.share_with("child", [])
        hits = (await backend.memory(thread_id="child").recall("parent plan", share_from_parent_thread_id="parent")).hits
        return revoked, hits

    assert await backends.run(scenario) == [0, []]

    async def to_itself(backend):
        await backend.memory(thread_id="parent").share_with("parent", ["p1"])

    async def past_expiry(backend):
        await backend.memory(thread_id="parent", clock=Clock(T0)).share_with("child", ["p1"], expires_at=T0)

    async def too_many(backend):
        await backend.memory(thread_id="parent").share_with("child", [f"x{i}" for i in range(257)])

    async def naive_expiry(backend):
        await backend.memory(thread_id="parent").share_with("child", ["p1"], expires_at=datetime(2030, 1, 1))

    assert await backends.run(to_itself) == Raised(InvalidEntryError)
    assert await backends.run(past_expiry) == Raised(LimitExceededError)
    assert await backends.run(too_many) == Raised(LimitExceededError)
    assert await backends.run(naive_expiry) == Raised(InvalidEntryError)


@pytest.mark.parametrize("share_from", ["", "  "])
async def test_a_blank_parent_thread_is_refused(backends, share_from):
    from prism_memory import InvalidScopeError

    async def scenario(backend):
        await backend.memory(thread_id="child").recall("x", share_from_parent_thread_id=share_from)

    assert await backends.run(scenario) == Raised(InvalidScopeError)


async def test_a_grant_shares_entries_not_ids(backends):
    async def scenario(backend):
        parent = backend.memory(thread_id="parent")
        await parent.remember([{"id": "p2", "text": "shared note"}], wait=True)
        await parent.share_with("child", ["p2"])
        await parent.forget(["p2"])
        await parent.remember([{"id": "p2", "text": "new private note"}], wait=True)
        child = backend.memory(thread_id="child")
        return [hit.text for hit in (await child.recall("note", share_from_parent_thread_id="parent")).hits]

    assert await backends.run(scenario) == []


async def test_shared_entries_of_another_width_are_skipped(server_dsn):
    """Unpinned install: a parent thread of 32-d entries cannot break a 64-d child's recall."""
    from prism_memory import create_hash_embedder
    from prism_memory.schema import SchemaConfig, migrate

    from parity import Backends, assert_same, normalise

    dsn = server_dsn("share_widths")
    migrate(dsn, SchemaConfig())
    outcomes = []
    async with Backends(dsn, SchemaConfig(dimensions=None)) as pair:
        for backend in pair.each:
            parent = backend.memory(thread_id="parent", embedder=create_hash_embedder(32))
            await parent.remember([{"id": "a", "text": "narrow note"}], wait=True)
            await parent.share_with("child", ["a"])
            child = backend.memory(thread_id="child", embedder=create_hash_embedder(64))
            await child.remember([{"id": "c", "text": "wide note"}], wait=True)
            result = await child.recall("note", share_from_parent_thread_id="parent")
            outcomes.append(normalise([hit.id for hit in result.hits]))
    assert_same(outcomes[0], outcomes[1])
    assert outcomes[0] == ["c"]


async def test_a_grant_shares_the_entries_as_they_are_when_it_is_made(backends):
    """a grant of an id the thread does not hold yet, or a rewrite of a granted id, shared later writes."""
    async def scenario(backend):
        parent = backend.memory(thread_id="parent")
        child = backend.memory(thread_id="child")

        async def seen():
            hits = (await child.recall("note diary", top_k=8, share_from_parent_thread_id="parent")).hits
            return sorted(f"{hit.id}={hit.text}" for hit in hits)

        await parent.remember([{"id": "pub", "text": "public note"}, {"id": "other", "text": "other note"}], wait=True)
        granted = await parent.share_with("child", ["pub", "other", "future"])
        await parent.remember([{"id": "future", "text": "private diary written after the grant"}], wait=True)
        after_new_id = await seen()
        await parent.remember([{"id": "pub", "text": "public note, rewritten in private"}], wait=True)
        after_rewrite = await seen()
        await parent.correct("other", "other note, corrected in private")
        after_correct = await seen()
        regranted = await parent.share_with("child", ["pub", "future"])
        return granted, after_new_id, after_rewrite, after_correct, regranted, await seen()

    assert await backends.run(scenario) == [
        2,
        ["other=other note", "pub=public note"],
        ["other=other note"],
        [],
        2,
        ["future=private diary written after the grant", "pub=public note, rewritten in private"],
    ]


@pytest.mark.parametrize("child_resource_id", [
    "user-bob", "user-ada-evil", "user-ad", "user-ada/agent:", "user-ada/agent:a/b", "user-ada/agent:-x",
    "user-ada/agents:x", "other/user-ada/agent:x",
])
async def test_a_grant_goes_only_to_the_parents_resource_or_a_delegated_agents(backends, child_resource_id):
    async def scenario(backend):
        parent = backend.memory(thread_id="parent")
        await parent.remember(PARENT_ENTRIES, wait=True)
        return await parent.share_with("child", ["p1"], child_resource_id=child_resource_id)

    assert await backends.run(scenario) == Raised(InvalidScopeError)

    async def allowed(backend):
        parent = backend.memory(thread_id="parent")
        await parent.remember(PARENT_ENTRIES, wait=True)
        return [await parent.share_with("child", ["p1"], child_resource_id=resource)
                for resource in ("user-ada", "user-ada/agent:x", "user-ada/agent:Researcher-2.b")]

    assert await backends.run(allowed) == [1, 1, 1]
