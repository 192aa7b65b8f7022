"""Concurrent writers on Postgres: no mixed widths, no spurious conflicts, any search_path."""

import asyncio

import psycopg
from prism_memory import (
    DimensionMismatchError,
    WorkingMemoryVersionConflict,
    create_hash_embedder,
    create_memory,
    create_postgres_memory_stores,
)
from prism_memory.schema import SchemaConfig, migrate


async def test_first_writes_of_different_widths_to_an_unpinned_thread_cannot_both_land(server_dsn):
    dsn = server_dsn("race_unpinned")
    migrate(dsn, SchemaConfig())  # unpinned: the first entry of a thread fixes its width
    first = await create_postgres_memory_stores(dsn)
    second = await create_postgres_memory_stores(dsn)
    try:
        outcomes = []
        for round_number in range(10):
            thread = f"thread-{round_number}"
            narrow = create_memory(tenant_id="t", resource_id="r", thread_id=thread, embedder=create_hash_embedder(8),
                                   vector_store=first.vector_store, working_store=first.working_store)
            wide = create_memory(tenant_id="t", resource_id="r", thread_id=thread, embedder=create_hash_embedder(16),
                                 vector_store=second.vector_store, working_store=second.working_store)
            results = await asyncio.gather(
                narrow.remember([{"id": "a", "text": "narrow"}], wait=True),
                wide.remember([{"id": "b", "text": "wide"}], wait=True),
                return_exceptions=True,
            )
            outcomes.append(sorted(type(result).__name__ for result in results))
            winner = narrow if not isinstance(results[0], Exception) else wide
            assert len((await winner.recall("narrow wide")).hits) == 1
    finally:
        await first.close()
        await second.close()
    assert outcomes == [[DimensionMismatchError.__name__, "RememberResult"]] * 10


async def test_concurrent_unconditional_updates_of_a_new_record_all_apply(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=64, skip_migrations=True, max_pool_size=8)
    try:
        memory = create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(64),
                               vector_store=stores.vector_store, working_store=stores.working_store)
        records = await asyncio.gather(*(memory.update_working({"writer": n}) for n in range(20)))
        final = await memory.get_working()
    finally:
        await stores.close()
    assert sorted(record.version for record in records) == list(range(1, 21))
    assert final.version == 20


async def test_concurrent_conditional_updates_lose_nothing(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=64, skip_migrations=True, max_pool_size=8)
    try:
        memory = create_memory(tenant_id="t", resource_id="r", embedder=create_hash_embedder(64),
                               vector_store=stores.vector_store, working_store=stores.working_store)
        await memory.update_working({"n": 0})
        results = await asyncio.gather(
            *(memory.update_working({"n": n}, expected_version=1) for n in range(1, 11)), return_exceptions=True
        )
        final = await memory.get_working()
    finally:
        await stores.close()
    applied = [result for result in results if not isinstance(result, Exception)]
    assert len(applied) == 1 and all(isinstance(r, WorkingMemoryVersionConflict) for r in results if r not in applied)
    assert final.version == 2 and final.data == applied[0].data


async def test_functions_do_not_depend_on_the_callers_search_path(pg_dsn):
    separator = "&" if "?" in pg_dsn else "?"
    dsn = f"{pg_dsn}{separator}options=-c%20search_path%3Dpg_catalog"
    with psycopg.connect(dsn) as conn:
        assert conn.execute("show search_path").fetchone()[0] == "pg_catalog"
    stores = await create_postgres_memory_stores(dsn, dimensions=64, skip_migrations=True)
    try:
        memory = create_memory(tenant_id="t", resource_id="r", thread_id="th", embedder=create_hash_embedder(64),
                               vector_store=stores.vector_store, working_store=stores.working_store)
        await memory.remember([{"id": "a", "text": "search path independent"}], wait=True)
        await memory.update_working({"ok": True})
        hits = (await memory.recall("search path")).hits
    finally:
        await stores.close()
    assert [hit.id for hit in hits] == ["a"]
