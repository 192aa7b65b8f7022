"""Concurrency and faults on Postgres: duplicate writers, failed statements,
cancellation and a killed connection in the middle of a batch."""

import asyncio

import numpy as np
import psycopg
import pytest
from prism_memory import LimitExceededError, Scope, StoreError, create_hash_embedder, create_memory, create_postgres_memory_stores
from prism_memory.types import EntryRecord

SCOPE = Scope("t", "r", "th")


def count(dsn: str, thread: str = "th") -> int:
    with psycopg.connect(dsn) as conn:
        return conn.execute("select count(*) from prism_memory.semantic_memory where thread_id = %s", (thread,)).fetchone()[0]


def batch(size: int, prefix: str = "e") -> list[EntryRecord]:
    rng = np.random.default_rng(1)
    return [EntryRecord(f"{prefix}{i}", f"entry {i} " + "word " * 50, rng.normal(size=64).tolist(), {"n": i}, None, None)
            for i in range(size)]


async def test_concurrent_remembers_of_one_id_leave_one_row_and_no_error(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=64, skip_migrations=True, max_pool_size=8)
    try:
        memory = create_memory(tenant_id="t", resource_id="r", thread_id="th", embedder=create_hash_embedder(64),
                               vector_store=stores.vector_store, working_store=stores.working_store)
        writers = [create_memory(tenant_id="t", resource_id="r", thread_id="th", embedder=create_hash_embedder(64),
                                 vector_store=stores.vector_store, working_store=stores.working_store) for _ in range(8)]
        results = await asyncio.gather(*(writer.remember([{"id": "same", "text": f"version {n}"}], wait=True)
                                         for n, writer in enumerate(writers)), return_exceptions=True)
        hits = (await memory.recall("version", top_k=8)).hits
    finally:
        await stores.close()
    assert [type(result).__name__ for result in results] == ["RememberResult"] * 8
    assert [hit.id for hit in hits] == ["same"] and count(pg_dsn) == 1


async def test_a_failed_statement_leaves_no_connection_in_an_aborted_transaction(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=64, skip_migrations=True, min_pool_size=2, max_pool_size=2)
    try:
        store = stores.vector_store
        for _ in range(4):
            with pytest.raises(LimitExceededError):
                await store.recall(SCOPE, [1.0] * 64, "q", 99, 0)  # rejected inside recall_v3 (PM005)
        statuses = []
        for _ in range(2):
            async with stores.pool.connection() as conn:
                statuses.append(conn.info.transaction_status)
        assert await store.remember(SCOPE, batch(1)) == (1, [])
    finally:
        await stores.close()
    assert statuses == [psycopg.pq.TransactionStatus.IDLE] * 2


async def test_a_cancelled_batch_write_lands_whole_or_not_at_all(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=64, skip_migrations=True)
    outcomes = []
    try:
        for attempt, delay in enumerate((0.001, 0.01, 0.05, 0.2, 5.0)):
            records = batch(1000, prefix=f"a{attempt}-")
            try:
                await asyncio.wait_for(stores.vector_store.remember(Scope("t", "r", f"th{attempt}"), records), delay)
                outcomes.append("written")
            except (asyncio.TimeoutError, StoreError):
                outcomes.append("cancelled")
            assert count(pg_dsn, f"th{attempt}") in (0, 1000)
        assert await stores.vector_store.count_by_thread(Scope("t", "r", "th4")) == 1000  # the pool still works
    finally:
        await stores.close()
    assert outcomes[-1] == "written"


async def test_a_connection_killed_in_the_middle_of_a_batch_leaves_all_or_nothing(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=64, skip_migrations=True, max_pool_size=1)
    killed = []

    async def killer(thread: str) -> None:
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            for _ in range(400):
                rows = admin.execute("select pid from pg_stat_activity where query like '%%remember_v3(%%' "
                                     "and pid <> pg_backend_pid() and state = 'active'").fetchall()
                if rows:
                    killed.append(admin.execute("select pg_terminate_backend(%s::int)", (rows[0][0],)).fetchone()[0])
                    return
                await asyncio.sleep(0.002)

    try:
        for attempt in range(3):
            thread = f"kill{attempt}"
            task = asyncio.create_task(killer(thread))
            try:
                await stores.vector_store.remember(Scope("t", "r", thread), batch(2000, prefix=f"k{attempt}-"))
            except StoreError:
                pass
            await task
            assert count(pg_dsn, thread) in (0, 2000)
        assert await stores.vector_store.count_by_thread(Scope("t", "r", "kill0")) in (0, 2000)  # the pool recovered
    finally:
        await stores.close()
    assert killed and all(killed)
