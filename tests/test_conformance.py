"""The public conformance suite runs green on both of our adapters and catches a broken one."""

import pytest
from prism_memory import (
    ConformanceError,
    create_hash_embedder,
    create_memory_vector_store,
    create_memory_working_store,
    create_postgres_memory_stores,
    run_memory_conformance,
)
from prism_memory.conformance import CHECKS
from prism_memory.emulator import MemoryVectorStore


async def test_the_emulator_conforms():
    report = await run_memory_conformance(lambda: {
        "embedder": create_hash_embedder(64),
        "vector_store": create_memory_vector_store(),
        "working_store": create_memory_working_store(),
    })
    assert report.passed == list(CHECKS)


async def test_postgres_conforms(pg_dsn):
    stores = await create_postgres_memory_stores(pg_dsn, skip_migrations=True)
    try:
        report = await run_memory_conformance(lambda: {
            "embedder": create_hash_embedder(64), "vector_store": stores.vector_store, "working_store": stores.working_store,
        })
    finally:
        await stores.close()
    assert report.passed == list(CHECKS)


class LeakyStore(MemoryVectorStore):
    """A broken adapter: its recall gate lets every stored entry through (no consent, no tombstones)."""

    def _visible(self, key, row, require_consent):
        return True


async def test_a_store_that_leaks_revoked_entries_fails_the_consent_check():
    with pytest.raises(ConformanceError) as caught:
        await run_memory_conformance(lambda: {
            "embedder": create_hash_embedder(64), "vector_store": LeakyStore(), "working_store": create_memory_working_store(),
        })
    assert "consent_gate" in caught.value.failures
