"""Failover to a streaming standby: a real primary and standby on 127.0.0.1 (tests/failover.py), the store on a
multi-host DSN with ``target_session_attrs=read-write``. About 25 s together."""

import asyncio

import psycopg
import pytest
from prism_memory import create_hash_embedder, create_memory, create_postgres_memory_stores

from chaos import DIMENSIONS, all_entries
from failover import ReplicatedPair, run_failover


@pytest.mark.slow
async def test_after_a_promotion_writes_reach_the_new_primary_and_no_acknowledged_write_is_lost():
    pair = await asyncio.to_thread(ReplicatedPair, True)
    try:
        # Not skipping migrations: the DSN's form (hosts and ports in the query) serves them too.
        stores = await create_postgres_memory_stores(pair.dsn, dimensions=DIMENSIONS, max_pool_size=4, pool_timeout=10)
        memory = create_memory(tenant_id="acme", resource_id="user_1", thread_id="main",
                               embedder=create_hash_embedder(DIMENSIONS), vector_store=stores.vector_store,
                               working_store=stores.working_store)
        try:
            await memory.remember([{"id": f"e{n}", "text": f"note {n}"} for n in range(10)], wait=True)
            await asyncio.to_thread(pair.promote)
            # The old primary still runs, fenced read-only: the write it refuses goes to the new primary, and
            # the reads after it too (the pool dropped every connection to the old one).
            await asyncio.to_thread(pair.fence_primary)
            await memory.remember([{"id": "after-fence", "text": "note after the fence"}], wait=True)
            after_fence = {record.id for record in await all_entries(memory)}
            await asyncio.to_thread(pair.stop_primary)
            await memory.remember([{"id": "after-stop", "text": "note after the stop"}], wait=True)
            recalled = {hit.id for hit in (await memory.recall("note", top_k=20)).hits}
        finally:
            await stores.close()
        with psycopg.connect(pair.server_dsn(1)) as promoted:
            stored = {row[0] for row in promoted.execute("select id from prism_memory.semantic_memory")}
    finally:
        await asyncio.to_thread(pair.close)
    written = {f"e{n}" for n in range(10)}
    assert after_fence == written | {"after-fence"}
    assert recalled == stored == written | {"after-fence", "after-stop"}


@pytest.mark.slow
async def test_a_failover_under_load_fails_no_call_after_the_switch_and_loses_no_acknowledged_write():
    result = await run_failover(clients=4, seconds=9.0, synchronous=True, switch_at=3.0, gap_s=1.0)
    assert result.ops > 50
    assert result.untyped_errors == []
    assert result.failed_after_recovery == []
    assert result.lost_acknowledged_writes == []
    assert result.recovery_ms < 2000
