"""The public conformance suite runs green on both of our adapters and catches a broken one."""

import pytest
from prism_memory import (
    ConformanceError,
    RecallScoringOptions,
    create_hash_embedder,
    create_memory_vector_store,
    create_memory_working_store,
    create_postgres_memory_stores,
    run_memory_conformance,
)
from prism_memory.conformance import CHECKS
from prism_memory.emulator import EmulatorVectorStore


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


class LeakyStore(EmulatorVectorStore):
    """A broken adapter: its recall gate lets every stored entry through (no consent, no tombstones)."""

    def _visible(self, key, row, require_consent):
        return True


class EternalGrants(EmulatorVectorStore):
    """A broken adapter: share grants never expire."""

    async def share_with(self, scope, child_resource_id, child_thread_id, source_ids, expires_at=None, now=None):
        return await super().share_with(scope, child_resource_id, child_thread_id, source_ids, None, now)


class GreedyTopK(EmulatorVectorStore):
    """A broken adapter: it ignores top_k."""

    async def recall(self, scope, query_embedding, query_text, top_k, *args, **kwargs):
        return await super().recall(scope, query_embedding, query_text, 32, *args, **kwargs)


class NoRecency(EmulatorVectorStore):
    """A broken adapter: it drops the recency weight."""

    async def recall(self, *args, scoring=None, **kwargs):
        if scoring is not None:
            scoring = RecallScoringOptions(None, scoring.importance_weight or 0.0, None)
        return await super().recall(*args, scoring=scoring, **kwargs)


class ModelBlind(EmulatorVectorStore):
    """A broken adapter: it ignores the embedding model, so two models' vectors mix in one thread."""

    async def remember(self, scope, records, now=None, model=None):
        return await super().remember(scope, records, now)

    async def recall(self, *args, model=None, **kwargs):
        return await super().recall(*args, **kwargs)


class SweepOnly(EmulatorVectorStore):
    """A broken adapter: expiry only counts once the sweep ran (as in langgraph before PR#8354)."""

    def _live(self, key, row, now):
        return True


class StayAtHome(EmulatorVectorStore):
    """A broken adapter: it ignores across_threads."""

    async def recall(self, *args, across_threads=False, **kwargs):
        return await super().recall(*args, **kwargs)


@pytest.mark.parametrize("store, check", [(LeakyStore, "consent_gate"), (EternalGrants, "grant_expiry"),
                                          (GreedyTopK, "top_k_and_adjacency"), (NoRecency, "recency"),
                                          (ModelBlind, "embedding_model_guard"), (StayAtHome, "across_threads"),
                                          (SweepOnly, "expiry")])
async def test_a_broken_store_fails_the_check_for_its_bug(store, check):
    with pytest.raises(ConformanceError) as caught:
        await run_memory_conformance(lambda: {
            "embedder": create_hash_embedder(64), "vector_store": store(), "working_store": create_memory_working_store(),
        })
    assert check in caught.value.failures
