"""The Postgres adapter survives a pooled connection the server terminated between calls."""

import psycopg
from prism_memory import create_hash_embedder, create_memory, create_postgres_memory_stores

from conftest import TEST_DIMENSIONS


async def test_a_connection_terminated_between_calls_does_not_break_the_next_call(pg_dsn):
    stores = await create_postgres_memory_stores(
        pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True, min_pool_size=1, max_pool_size=1
    )
    memory = create_memory(
        tenant_id="t",
        resource_id="r",
        thread_id="th",
        embedder=create_hash_embedder(TEST_DIMENSIONS),
        vector_store=stores.vector_store,
        working_store=stores.working_store,
    )
    try:
        await memory.remember([{"id": "a", "text": "survives a restart"}], wait=True)
        outcomes = []
        for call in ("recall", "update_working", "get_working", "remember"):
            async with stores.pool.connection() as conn:  # the pool's only connection
                pid = conn.info.backend_pid
            with psycopg.connect(pg_dsn, autocommit=True) as admin:
                assert admin.execute("select pg_terminate_backend(%s::int, 5000)", (pid,)).fetchone()[0] is True
            if call == "recall":
                outcomes.append([hit.id for hit in (await memory.recall("restart")).hits])
            elif call == "update_working":
                outcomes.append((await memory.update_working({"n": 1})).version)
            elif call == "get_working":
                outcomes.append((await memory.get_working()).data)
            else:
                outcomes.append((await memory.remember([{"id": "b", "text": "second"}], wait=True)).accepted)
    finally:
        await stores.close()
    assert outcomes == [["a"], 1, {"n": 1}, 1]
