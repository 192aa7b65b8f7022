"""The embedding-model guard on both backends: a thread records its embedder's model id and width; another
model of the same width is refused on every write and recall; rebuild_index switches the model.

Look-alike tenants and threads (``acme``/``acme-corp``, ``a_b``/``a-b``) with distinct entry ids make sure one
thread's record never answers for another's.
"""

from __future__ import annotations

import psycopg
import pytest
from prism_memory import (
    ConfigurationError,
    DimensionMismatchError,
    EmbeddingModel,
    EmbeddingModelMismatchError,
    Scope,
    create_hash_embedder,
    create_postgres_memory_stores,
)
from prism_memory.embedding import HASH_FEATURE_RULE
from prism_memory.scoring import LEXICAL_WEIGHT
from prism_memory.types import EntryRecord

from conftest import TEST_DIMENSIONS

TURNS = ["Prefers concise answers", "Has a dog called Rex", "Walks Rex every morning", "Works as a nurse in Lisbon"]


class OtherModel:
    """The hash embedder's vectors reversed, under another model id: another vector space of the same width."""

    def __init__(self, model_id: str = "other-model", dimensions: int = TEST_DIMENSIONS) -> None:
        self.dimensions = dimensions
        self.model_id = model_id
        self._hash = create_hash_embedder(dimensions)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return [vector[::-1] for vector in await self._hash.embed(texts)]


class Anonymous:
    """A host embedder of today's shape: ``dimensions`` and ``embed`` only, no identity."""

    def __init__(self, dimensions: int = TEST_DIMENSIONS) -> None:
        self.dimensions = dimensions
        self._hash = create_hash_embedder(dimensions)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return await self._hash.embed(texts)


def entries(prefix: str = "m") -> list[dict]:
    return [{"id": f"{prefix}{index}", "text": text} for index, text in enumerate(TURNS, start=1)]


async def outcome(call) -> str:
    """``"ok"`` or the name of the error ``call`` raised."""
    try:
        await call
    except Exception as exc:  # compared by type name
        return type(exc).__name__
    return "ok"


def recorded(dsn: str) -> list[tuple]:
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "select tenant_id, resource_id, thread_id, model_id, dimensions from prism_memory.semantic_memory_embedding_model "
            "order by 1, 2, 3").fetchall()


def test_the_hash_embedder_names_its_feature_rule_and_width():
    assert create_hash_embedder(64).model_id == f"prism-memory/hash-v{HASH_FEATURE_RULE}-d64"
    assert create_hash_embedder(256).model_id != create_hash_embedder(64).model_id


async def test_another_model_of_the_same_width_is_refused_and_nothing_changes(backends, pg_dsn):
    async def scenario(backend):
        memory = backend.memory(tenant_id="acme", thread_id="a_b")
        other = backend.memory(tenant_id="acme", thread_id="a_b", embedder=OtherModel())
        await memory.remember(entries(), wait=True)
        steps = {
            "remember": await outcome(other.remember([{"id": "x1", "text": "Lives in Porto"}], wait=True)),
            "recall": await outcome(other.recall("dog")),
            "correct": await outcome(other.correct("m1", "Prefers long answers")),
        }
        # Look-alike tenant and thread: their own records, so the other model is theirs to use.
        for tenant, thread in (("acme-corp", "a_b"), ("acme", "a-b")):
            neighbour = backend.memory(tenant_id=tenant, thread_id=thread, embedder=OtherModel())
            await neighbour.remember([{"id": f"{tenant}-{thread}-1", "text": "Walks Rex every morning"}], wait=True)
            steps[f"{tenant}/{thread}"] = [hit.id for hit in (await neighbour.recall("Rex")).hits]
        kept = await memory.recall("concise answers", top_k=4)
        stored = await memory.config.vector_store.count_by_thread(memory.config.scope)
        return steps, [(hit.id, hit.text) for hit in kept.hits], stored

    steps, kept, count = await backends.run(scenario)
    assert steps == {
        "remember": "EmbeddingModelMismatchError", "recall": "EmbeddingModelMismatchError",
        "correct": "EmbeddingModelMismatchError",
        "acme-corp/a_b": ["acme-corp-a_b-1"], "acme/a-b": ["acme-a-b-1"],
    }
    assert kept[0] == ["m1", "Prefers concise answers"] and count == 4  # nothing written, nothing corrected
    hash_id = create_hash_embedder(TEST_DIMENSIONS).model_id
    assert recorded(pg_dsn) == [
        ("acme", "user-ada", "a-b", "other-model", TEST_DIMENSIONS),
        ("acme", "user-ada", "a_b", hash_id, TEST_DIMENSIONS),
        ("acme-corp", "user-ada", "a_b", "other-model", TEST_DIMENSIONS),
    ]


async def test_rebuild_index_with_the_new_embedder_switches_the_thread(backends, pg_dsn):
    async def scenario(backend):
        old = backend.memory()
        new = backend.memory(embedder=OtherModel())
        await old.remember(entries(), wait=True)
        before = [await outcome(new.remember([{"id": "n1", "text": "Lives in Porto"}], wait=True)),
                  await outcome(new.recall("Porto"))]
        cursor, pages = None, 0
        while True:  # the documented way to switch models: rebuild every page with the new embedder
            page = await new.rebuild_index(cursor=cursor, batch_size=3)
            pages += 1
            cursor = page.next_cursor
            if cursor is None:
                break
        after = [await outcome(new.remember([{"id": "n1", "text": "Lives in Porto"}], wait=True)),
                 await outcome(old.remember([{"id": "o1", "text": "Old model"}], wait=True)),
                 await outcome(old.recall("dog"))]
        result = await new.recall("Has a dog called Rex", top_k=5)
        return before, pages, after, [(hit.id, hit.score) for hit in result.hits]

    before, pages, after, hits = await backends.run(scenario)
    assert before == ["EmbeddingModelMismatchError", "EmbeddingModelMismatchError"]
    assert pages == 2
    assert after == ["ok", "EmbeddingModelMismatchError", "EmbeddingModelMismatchError"]
    # Re-embedded with the new model: the same text scores a cosine of 1 under it.
    assert hits[0][0] == "m2" and hits[0][1] == pytest.approx(1 + LEXICAL_WEIGHT)
    assert recorded(pg_dsn) == [("t1", "user-ada", "thread-1", "other-model", TEST_DIMENSIONS)]


async def test_a_width_change_is_still_a_dimension_mismatch(backends):
    async def scenario(backend):
        memory = backend.memory(thread_id="wide")
        await memory.remember(entries(), wait=True)
        narrow = backend.memory(thread_id="wide", embedder=OtherModel(dimensions=32))
        return [await outcome(narrow.remember([{"id": "x", "text": "narrow"}], wait=True)),
                await outcome(narrow.rebuild_index())]

    assert await backends.run(scenario) == ["DimensionMismatchError", "DimensionMismatchError"]


async def test_an_embedder_without_an_identity_keeps_the_width_rule_alone(backends, pg_dsn):
    async def scenario(backend):
        anonymous = backend.memory(embedder=Anonymous())
        await anonymous.remember(entries("a"), wait=True)  # no record: nothing to compare with
        named = backend.memory(embedder=OtherModel())
        steps = [await outcome(named.remember([{"id": "n1", "text": "Lives in Porto"}], wait=True))]  # records its model
        steps.append(await outcome(anonymous.remember([{"id": "a9", "text": "Anonymous again"}], wait=True)))
        steps.append(await outcome(anonymous.recall("Porto")))
        steps.append(await outcome(backend.memory().recall("Porto")))  # the hash embedder is another model
        return steps

    assert await backends.run(scenario) == ["ok", "ok", "ok", "EmbeddingModelMismatchError"]
    assert recorded(pg_dsn) == [("t1", "user-ada", "thread-1", "other-model", TEST_DIMENSIONS)]


async def test_an_emptied_thread_takes_a_new_model(backends):
    async def scenario(backend):
        memory = backend.memory(thread_id="emptied")
        await memory.remember(entries(), wait=True)
        await memory.forget([f"m{index}" for index in range(1, 5)])
        other = backend.memory(thread_id="emptied", embedder=OtherModel())
        steps = [await outcome(other.recall("dog")), await outcome(other.remember(entries("n"), wait=True))]
        return steps, await outcome(memory.remember([{"id": "m9", "text": "the hash model again"}], wait=True))

    assert await backends.run(scenario) == [["ok", "ok"], "EmbeddingModelMismatchError"]


async def test_a_batch_over_many_threads_is_refused_whole(backends):
    async def scenario(backend):
        first = backend.memory(thread_id="t-a")
        await first.remember(entries("a"), wait=True)
        store = first.config.vector_store
        model = EmbeddingModel("other-model", TEST_DIMENSIONS)
        vectors = await OtherModel().embed(["fresh thread", "recorded thread"])
        writes = [
            (Scope("t1", "user-ada", "t-b"), [EntryRecord("b1", "fresh thread", vectors[0], {}, None, None)]),
            (Scope("t1", "user-ada", "t-a"), [EntryRecord("a9", "recorded thread", vectors[1], {}, None, None)]),
        ]
        refused = await outcome(store.remember_batch(writes, model=model))
        counts = [await store.count_by_thread(Scope("t1", "user-ada", thread)) for thread in ("t-a", "t-b")]
        fresh = await outcome(store.remember_batch(writes[:1], model=model))
        return refused, counts, fresh, await store.count_by_thread(Scope("t1", "user-ada", "t-b"))

    assert await backends.run(scenario) == ["EmbeddingModelMismatchError", [4, 0], "ok", 1]


async def test_a_child_recalling_a_parents_shared_entries_needs_the_parents_model(backends):
    async def scenario(backend):
        parent = backend.memory(thread_id="parent")
        await parent.remember(entries("p"), wait=True)
        child = parent.child("helper")
        await parent.share_with(child.config.scope.thread_id, ["p2"], child_resource_id=child.config.scope.resource_id)
        shared = [hit.id for hit in (await child.recall("dog", share_from_parent_thread_id="parent")).hits]
        other_child = backend.memory(thread_id="parent", embedder=OtherModel()).child("helper")  # the same child thread
        refused = await outcome(other_child.recall("dog", share_from_parent_thread_id="parent"))
        alone = await outcome(other_child.recall("dog"))  # its own (empty) thread only
        await parent.share_with(child.config.scope.thread_id, [], child_resource_id=child.config.scope.resource_id)
        revoked = await outcome(other_child.recall("dog", share_from_parent_thread_id="parent"))
        return shared, refused, alone, revoked

    assert await backends.run(scenario) == [["p2"], "EmbeddingModelMismatchError", "ok", "ok"]


async def test_a_model_switched_by_another_process_is_seen_by_the_next_write(pg_dsn):
    """Two stores with their own pools stand for two processes: the guard holds no Python state, so the first
    process's next write and recall after the second one rebuilt the thread with another model are refused."""
    first = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    second = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    try:
        from prism_memory import create_memory

        def memory(stores, embedder):
            return create_memory(tenant_id="t1", resource_id="user", thread_id="shared", embedder=embedder,
                                 vector_store=stores.vector_store, working_store=stores.working_store)

        old = memory(first, create_hash_embedder(TEST_DIMENSIONS))
        await old.remember(entries(), wait=True)
        assert [hit.id for hit in (await old.recall("dog")).hits][:1] == ["m2"]
        new = memory(second, OtherModel())
        assert (await new.rebuild_index(batch_size=128)).next_cursor is None
        with pytest.raises(EmbeddingModelMismatchError):
            await old.remember([{"id": "late", "text": "written after the switch"}], wait=True)
        with pytest.raises(EmbeddingModelMismatchError):
            await old.recall("dog")
        assert await first.vector_store.count_by_thread(Scope("t1", "user", "shared")) == 4
    finally:
        await first.close()
        await second.close()


@pytest.mark.parametrize("model, error", [
    ("not a model", ConfigurationError),
    (EmbeddingModel("", TEST_DIMENSIONS), ConfigurationError),
    (EmbeddingModel("x" * 257, TEST_DIMENSIONS), ConfigurationError),
    (EmbeddingModel("m", True), ConfigurationError),
    (EmbeddingModel("m", TEST_DIMENSIONS + 1), DimensionMismatchError),  # not the embeddings' width
])
async def test_a_bad_model_is_refused_by_both_stores_before_anything_is_sent(backends, model, error):
    async def scenario(backend):
        vector = (await create_hash_embedder(TEST_DIMENSIONS).embed(["x"]))[0]
        store = backend.vector_store
        scope = Scope("t1", "user-ada", "thread-1")
        return [
            await outcome(store.remember(scope, [EntryRecord("x", "x", vector, {}, None, None)], model=model)),
            await outcome(store.recall(scope, vector, "x", 1, 0, model=model)),
            await outcome(store.reembed(scope, ["x"], ["x"], [vector], model=model)),
        ]

    assert await backends.run(scenario) == [error.__name__] * 3


async def test_create_memory_refuses_an_embedder_with_a_bad_model_id(backends):
    class Blank(Anonymous):
        model_id = "  "

    with pytest.raises(ConfigurationError):
        backends.emulator.memory(embedder=Blank())


def test_the_sql_guard_refuses_a_blank_model_id_and_bad_threads(pg_dsn):
    with psycopg.connect(pg_dsn) as conn:
        vector = "[" + ",".join(["1"] * TEST_DIMENSIONS) + "]"
        conn.execute("select prism_memory.use_embedding_model_v1('t1', array['r'], array['held'], 'm', %s)", (TEST_DIMENSIONS,))
        conn.execute("select prism_memory.remember_v3('t1', 'r', 'held', array['e1'], array['x'], array[%s::vector], "
                     "array['{}'::jsonb])", (vector,))
        conn.commit()
        for arguments, state in (
            (("t1", ["r"], ["th"], " ", 64, False), "PM017"),
            (("t1", ["r"], ["th"], "m", 0, False), "PM017"),
            (("t1", ["r"], [], "m", 64, False), "PM001"),
            (("t1", ["r"], [" "], "m", 64, False), "PM001"),
            # a psql caller's NULL p_switch is refused, not read as a switch of a thread that holds another model's entries
            (("t1", ["r"], ["held"], "other", TEST_DIMENSIONS, None), "PM017"),
        ):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute("select prism_memory.use_embedding_model_v1(%s, %s, %s, %s, %s, %s)", arguments)
            assert raised.value.sqlstate == state, arguments
            conn.rollback()
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("select * from prism_memory.recall_v3('t1', 'r', 'th', array_fill(1, array[64])::vector, 'q', "
                         "p_model_id => '')")
        assert raised.value.sqlstate == "PM017"


async def test_refused_writes_leave_the_connection_usable(pg_dsn):
    """A write refused in its pipeline must not leave psycopg thinking a statement was prepared: more refusals
    than psycopg's prepare threshold (5), then good writes, on a pool of one connection."""
    from prism_memory import create_memory

    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True,
                                                 max_pool_size=1)
    try:
        def memory(embedder):
            return create_memory(tenant_id="t1", resource_id="user", thread_id="one", embedder=embedder,
                                 vector_store=stores.vector_store, working_store=stores.working_store)

        good, other = memory(create_hash_embedder(TEST_DIMENSIONS)), memory(OtherModel())
        await good.remember(entries(), wait=True)
        for attempt in range(8):
            with pytest.raises(EmbeddingModelMismatchError):
                await other.remember([{"id": f"x{attempt}", "text": "refused"}], wait=True)
            await good.remember([{"id": f"g{attempt}", "text": f"accepted {attempt}"}], wait=True)
        assert await stores.vector_store.count_by_thread(Scope("t1", "user", "one")) == 4 + 8
    finally:
        await stores.close()
