"""Bulk ingest (issue 7): remember_batch writes many threads of one tenant in one call, all or nothing."""

from datetime import datetime, timezone

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from prism_memory import MemoryConsent, Scope
from prism_memory.types import EntryRecord

from conftest import TEST_DIMENSIONS

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
THREAD_A = Scope("t1", "user-ada", "thread-a")
THREAD_B = Scope("t1", "user-ada", "thread-b")
THREAD_C = Scope("t1", "user-bob", "thread-c")


def vector(seed: int) -> list[float]:
    return np.random.default_rng(seed).standard_normal(TEST_DIMENSIONS).astype(np.float32).tolist()


def record(entry_id: str, seed: int, **extra) -> EntryRecord:
    metadata = extra.pop("metadata", {})
    return EntryRecord(entry_id, f"note {entry_id} about the garden", vector(seed), metadata,
                       extra.pop("sequence", None), extra.pop("importance", None), extra.pop("consent", None))


def writes():
    """Three threads; the batch lists them out of code-point order on purpose."""
    revoked = MemoryConsent("user", "thread", True, None, NOW)
    return [
        (THREAD_C, [record("c1", 31), record("c2", 32, importance=0.4)]),
        (THREAD_A, [record("a1", 11), record("a2", 12, metadata={"_lineage": {"sourceIds": ["a1"]}}),
                    record("a3", 13, consent=revoked)]),
        (THREAD_B, [record("b1", 21, sequence=40)]),
    ]


async def snapshot(store, scopes):
    """Every stored entry of ``scopes`` (export view off) and a recall per scope."""
    state = {}
    for scope in scopes:
        state[scope.thread_id] = {
            "entries": await store.list_by_thread(scope, None, 200),
            "recall": await store.recall(scope, vector(11), "garden", 5, 0, now=NOW),
        }
    return state


async def test_batch_writes_each_thread_as_remember_would(backends):
    async def scenario(backend):
        store = backend.vector_store
        results = await store.remember_batch(writes(), now=NOW)
        return results, await snapshot(store, [THREAD_A, THREAD_B, THREAD_C])

    results, state = await backends.run(scenario)
    # One result per item of writes, in its order: C, A (a3 revoked: tombstoned), B.
    assert results == [[2, []], [3, ["a3"]], [1, []]]
    assert [entry["id"] for entry in state["thread-a"]["entries"]] == ["a1", "a2", "a3"]
    assert [entry["sequence"] for entry in state["thread-a"]["entries"]] == [1, 2, 3]
    assert [entry["sequence"] for entry in state["thread-b"]["entries"]] == [40]
    assert state["thread-c"]["entries"][1]["importance"] == 0.4
    assert "a3" not in [hit["id"] for hit in state["thread-a"]["recall"]["hits"]]
    # Scoped: a thread's recall never returns another thread's entries.
    assert {hit["id"] for hit in state["thread-c"]["recall"]["hits"]} == {"c1", "c2"}


async def test_batch_equals_one_remember_per_thread(backends):
    for backend in backends.each:
        store = backend.vector_store
        await store.remember_batch(writes(), now=NOW)
        batched = await snapshot(store, [THREAD_A, THREAD_B, THREAD_C])
        moved = [(Scope("t2", scope.resource_id, scope.thread_id), records) for scope, records in writes()]
        for scope, records in moved:
            await store.remember(scope, records, now=NOW)
        single = await snapshot(store, [Scope("t2", s.resource_id, s.thread_id) for s in (THREAD_A, THREAD_B, THREAD_C)])
        assert [[e.id, e.sequence, e.consent, e.metadata] for s in batched.values() for e in s["entries"]] == \
            [[e.id, e.sequence, e.consent, e.metadata] for s in single.values() for e in s["entries"]]
        assert [[h.id, h.score] for s in batched.values() for h in s["recall"].hits] == \
            [[h.id, h.score] for s in single.values() for h in s["recall"].hits]


async def test_a_failing_thread_leaves_every_thread_of_the_batch_unwritten(backends):
    async def scenario(backend):
        store = backend.vector_store
        source = Scope("t1", "user-ada", "thread-x")
        # 300 entries derived from "root": invalidating root walks more than 256 lineage edges.
        await store.remember(source, [record("root", 1)] + [
            record(f"d{n}", 100 + n, metadata={"_lineage": {"sourceIds": ["root"]}}) for n in range(300)], now=NOW)
        before = await store.count_by_thread(source)
        revoked = MemoryConsent("user", "thread", False, None, None)
        try:
            # thread-a sorts first and is written before thread-x fails in its lineage walk.
            await store.remember_batch([(source, [record("root", 1, consent=revoked)]),
                                        (THREAD_A, [record("a1", 11)])], now=NOW)
        except Exception as exc:
            error = type(exc).__name__
        else:
            error = None
        return error, before, await store.count_by_thread(THREAD_A), await store.count_by_thread(source), \
            (await store.list_by_thread(source, None, 1))[0].consent

    error, before, written_a, after, root_consent = await backends.run(scenario)
    assert error == "LineageLimitError"
    assert (written_a, after, root_consent) == (0, before, None)


@pytest.mark.parametrize(
    "bad_writes",
    [
        [(THREAD_A, [record("a1", 1)]), (Scope("t2", "user-ada", "thread-b"), [record("b1", 2)])],  # two tenants
        [(THREAD_A, [record("a1", 1)]), (THREAD_A, [record("a2", 2)])],  # one thread twice
        [(Scope("t1", "user-ada", None), [record("a1", 1)])],  # no thread
        [(THREAD_A, [record("a1", 1)]), (THREAD_B, [record(" ", 2)])],  # a blank id in the second thread
    ],
    ids=["two-tenants", "thread-twice", "no-thread", "blank-id"],
)
async def test_bad_batches_fail_typed_before_anything_is_written(backends, bad_writes):
    async def scenario(backend):
        store = backend.vector_store
        try:
            await store.remember_batch(bad_writes, now=NOW)
        except Exception as exc:
            error = type(exc).__name__
        else:
            error = None
        return error, await store.count_by_thread(THREAD_A)

    error, written = await backends.run(scenario)
    assert error in {"InvalidScopeError", "InvalidEntryError"} and written == 0


async def test_empty_batches_write_nothing(backends):
    async def scenario(backend):
        store = backend.vector_store
        return await store.remember_batch([], now=NOW), await store.remember_batch([(THREAD_A, [])], now=NOW)

    assert await backends.run(scenario) == [[], [[0, []]]]


def test_sql_callers_must_send_a_threads_rows_together(pg_dsn):
    """A direct SQL caller gets PM002 when one thread's rows are split by another's."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        register_vector(conn)
        embeddings = [np.asarray(vector(n), dtype=np.float32) for n in range(3)]
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(
                "select * from prism_memory.remember_batch_v1('t1', array['r','r','r'], array['a','b','a'], "
                "array['e1','e2','e3'], array['x','y','z'], %s::vector[])", (embeddings,))
        assert raised.value.sqlstate == "PM002" and "not contiguous" in str(raised.value)
        rows = conn.execute(
            "select resource_id, thread_id, written from prism_memory.remember_batch_v1('t1', "
            "array['r','r','q'], array['a','a','b'], array['e1','e2','e3'], array['x','y','z'], %s::vector[])",
            (embeddings,)).fetchall()
        assert rows == [("q", "b", 1), ("r", "a", 2)]
        with pytest.raises(psycopg.Error) as raised:  # one text too many: refused, not ignored
            conn.execute(
                "select * from prism_memory.remember_batch_v1('t1', array['r','r','r'], array['a','a','a'], "
                "array['e4','e5','e6'], array['x','y','z','w'], %s::vector[])", (embeddings,))
        assert raised.value.sqlstate == "PM002" and "differ in length" in str(raised.value)
