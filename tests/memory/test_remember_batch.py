"""Bulk ingest: remember_batch writes many threads of one tenant in one call, all or nothing."""

import asyncio
from datetime import datetime, timezone

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector
from prism_memory import MemoryConsent, Scope
from prism_memory.types import EntryRecord

from conftest import CITUS, TEST_DIMENSIONS

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


async def test_with_two_bad_threads_both_backends_raise_the_first_one_sql_meets(backends):
    async def scenario(backend):
        store = backend.vector_store
        chain = [record("c0", 1)] + [
            record(f"c{n}", 1 + n, metadata={"_lineage": {"sourceIds": [f"c{n - 1}"]}}) for n in range(1, 12)]
        await store.remember(THREAD_A, chain, now=NOW)
        revoked = MemoryConsent("user", "thread", False, None, None)
        bad_width = EntryRecord("x", "wrong width", [0.5] * (TEST_DIMENSIONS + 1), {}, None, None)
        try:
            # thread-a (first in code-point order) fails in its lineage walk (depth over 8), thread-b its check.
            await store.remember_batch([(THREAD_B, [bad_width]), (THREAD_A, [record("c0", 1, consent=revoked)])],
                                       now=NOW)
        except Exception as exc:
            return type(exc).__name__, await store.count_by_thread(THREAD_B)
        return None, await store.count_by_thread(THREAD_B)

    assert await backends.run(scenario) == ["LineageLimitError", 0]


async def test_batches_whose_threads_share_a_lock_key_do_not_deadlock(backends):
    """U+001F is the lock key's separator: these pairs of threads share an advisory lock, and the two batches
    list them in opposite (resource, thread) orders."""
    store = backends.postgres.vector_store
    first = [Scope("t1", "r\x1fa", "b"), Scope("t1", "r\x1fa\x1fa", "x")]
    second = [Scope("t1", "r", "a\x1fb"), Scope("t1", "r", "a\x1fa\x1fx")]
    rows = [record(f"m{n}", n) for n in range(300)]
    outcomes = await asyncio.gather(store.remember_batch([(scope, rows) for scope in first], now=NOW),
                                    store.remember_batch([(scope, rows) for scope in second], now=NOW),
                                    return_exceptions=True)
    assert outcomes == [[(300, []), (300, [])], [(300, []), (300, [])]]


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
                "select * from prism_memory.remember_batch_v2('t1', array['r','r','r'], array['a','b','a'], "
                "array['e1','e2','e3'], array['x','y','z'], %s::vector[])", (embeddings,))
        assert raised.value.sqlstate == "PM002" and "not contiguous" in str(raised.value)
        rows = conn.execute(
            "select resource_id, thread_id, written from prism_memory.remember_batch_v2('t1', "
            "array['r','r','q'], array['a','a','b'], array['e1','e2','e3'], array['x','y','z'], %s::vector[])",
            (embeddings,)).fetchall()
        assert rows == [("q", "b", 1), ("r", "a", 2)]
        with pytest.raises(psycopg.Error) as raised:  # one text too many: refused, not ignored
            conn.execute(
                "select * from prism_memory.remember_batch_v2('t1', array['r','r','r'], array['a','a','a'], "
                "array['e4','e5','e6'], array['x','y','z','w'], %s::vector[])", (embeddings,))
        assert raised.value.sqlstate == "PM002" and "differ in length" in str(raised.value)
        for bad in (  # two-dimensional arrays, and arrays that do not start at index 1
            "array[['r','r'],['r','r']], array[['a','a'],['b','b']], array[['e1','e2'],['e3','e4']], "
            "array[['x','y'],['z','w']], %s::vector[]",
            "'[0:1]={r,r}', '[0:1]={a,b}', '[0:1]={e1,e2}', '[0:1]={x,y}', %s::vector[]",
        ):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(f"select * from prism_memory.remember_batch_v2('t9', {bad})", (embeddings[:2],))
            assert raised.value.sqlstate == "PM002" and "one-dimensional" in str(raised.value)
        if not CITUS:  # Citus 14.0.1 crashes the coordinator on a delegated call with a NULL distribution argument
            with pytest.raises(psycopg.Error) as raised:
                conn.execute("select * from prism_memory.remember_batch_v2(null, '{}', '{}', '{}', '{}', '{}')")
            assert raised.value.sqlstate == "PM001"
        assert conn.execute("select count(*) from prism_memory.semantic_memory where tenant_id = 't9'").fetchone() == (0,)
