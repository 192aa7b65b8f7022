"""Recall over scopes larger than recall_v3's first probe (256 rows) and its exact threshold (5,000 travellers).

Below 5,000 travellers every path is exact, so both backends give the same answers whichever path Postgres
took: the probe certified by its bound, the full pass after a bound that could not certify (ties at the
boundary), and the across-thread leg. Over 5,000 travellers (a pinned install has their HNSW index),
Postgres reads the nearest through HNSW: that answer is checked against the emulator's exact one for
min(top_k, matches) hits and the share of the exact top 10 found, and the index is seen to be used.
"""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import psycopg
import pytest
from prism_memory import MemoryConsent, RecallScoringOptions, Scope, create_hash_embedder, create_postgres_memory_stores
from prism_memory.emulator import create_memory_vector_store
from prism_memory.types import EntryRecord

from conftest import CITUS, TEST_DIMENSIONS, citus_placement

WORDS = "tea coffee lisbon porto garden piano chess yoga budget invoice flight hotel dinner recipe".split()


def texts(count: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=4)) + f" note{n % 97}" for n in range(count)]


async def test_a_large_thread_is_ranked_exactly_whether_the_probe_certifies_or_not(backends):
    async def scenario(backend):
        memory = backend.memory(resource_id="a_b", thread_id="big")
        entries = [{"id": f"e{n:04d}", "text": text} for n, text in enumerate(texts(1500, 1))]
        for start in range(0, len(entries), 500):
            await memory.remember(entries[start : start + 500], wait=True)
        # Tombstones (bodies kept) among the first rows: they take probes' places, never hits'.
        await memory.config.vector_store.invalidate(memory.config.scope, [f"e{n:04d}" for n in range(0, 60, 3)], "revoked")
        ties = backend.memory(resource_id="a_b", thread_id="ties")
        # Written in the order opposite to their sequences: the best by tie-break are read last.
        await ties.remember([{"id": f"t{n:03d}", "text": "tea garden", "sequence": 400 - n} for n in range(400)],
                            wait=True)
        results = {}
        for query in ("tea garden", "lisbon flight hotel", "piano note7", "yoga budget chess"):
            result = await memory.recall(query, top_k=10)
            results[query] = [(hit.id, round(hit.score, 6)) for hit in result.hits]
        scored = await memory.recall("coffee recipe", top_k=8, explain=True,
                                     scoring=RecallScoringOptions(importance_weight=0.2))
        # 400 equal entries: the 256 probed bound the rest only with equality, so the full pass decides.
        tied = [hit.id for hit in (await ties.recall("tea garden", top_k=10)).hits]
        return results, [hit.id for hit in scored.hits], scored.explanation.removed, tied

    results, scored, removed, tied = await backends.run(scenario)
    assert all(len(hits) == 10 for hits in results.values()) and len(scored) == 8
    assert removed["invalidation"] == 20
    assert tied == [f"t{n:03d}" for n in range(399, 389, -1)]  # equal scores: by sequence


async def test_across_threads_over_more_than_a_probe_is_exact(backends):
    async def scenario(backend):
        reader = backend.memory(resource_id="a_b", thread_id="t0")
        await reader.remember([{"id": "own", "text": "tea lisbon", "consent": MemoryConsent(scope="user")}], wait=True)
        for thread in range(1, 7):
            memory = backend.memory(resource_id="a_b", thread_id=f"t{thread}")
            await memory.remember([
                {"id": f"t{thread}-{n:03d}", "text": text,
                 "consent": MemoryConsent(scope="user" if n % 2 else "thread")}
                for n, text in enumerate(texts(300, thread))], wait=True)
        return {query: [(hit.thread_id, hit.id) for hit in (await reader.recall(query, top_k=12, across_threads=True)).hits]
                for query in ("tea lisbon", "invoice budget", "chess note3")}

    outcome = await backends.run(scenario)
    assert all(len(hits) == 12 for hits in outcome.values())


@pytest.mark.slow
async def test_over_5000_travellers_hnsw_answers_min_top_k_matches_and_finds_the_exact_top(pg_dsn):
    """Postgres reads the travellers through their HNSW index here; the emulator ranks them exactly."""
    embed = create_hash_embedder(TEST_DIMENSIONS)
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    emulator = create_memory_vector_store(TEST_DIMENSIONS)
    try:
        writes = []
        for thread in range(12):
            scope = Scope("acme", "a_b", f"t{thread:02d}")
            batch = texts(500, 10 + thread)
            vectors = await embed.embed(batch)
            writes.append((scope, [EntryRecord(f"t{thread:02d}-{n:03d}", text, vector, {}, None, None,
                                               MemoryConsent(scope="user" if thread else "thread"))
                                   for n, (text, vector) in enumerate(zip(batch, vectors))]))
        for store in (stores.vector_store, emulator):
            await store.remember_batch(writes)
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute("analyze prism_memory.semantic_memory")
        found, expected = 0, 0
        for query in ("tea lisbon", "invoice budget hotel", "chess note3", "piano garden", "yoga dinner"):
            [vector] = await embed.embed([query])
            args = (Scope("acme", "a_b", "t00"), vector, query, 10, 0)
            got = await stores.vector_store.recall(*args, across_threads=True)
            exact = await emulator.recall(*args, across_threads=True)
            assert len(got.hits) == 10 and {hit.resource_id for hit in got.hits} == {"a_b"}
            truth = {(hit.thread_id, hit.id) for hit in exact.hits}
            cutoff = exact.hits[-1].score
            found += sum(1 for hit in got.hits if (hit.thread_id, hit.id) in truth or hit.score >= cutoff - 1e-6)
            expected += 10
        # The same recall on one connection, whose statistics are flushed right after: HNSW was read (on
        # Citus, the tenant's shard of the index, on the worker that holds it).
        where, index_name = pg_dsn, "semantic_memory_travel_hnsw_idx"
        if CITUS:
            where, shard = citus_placement(pg_dsn, "prism_memory.semantic_memory", "acme")
            index_name = f"{index_name}_{shard}"
        with psycopg.connect(where, autocommit=True) as conn:
            if CITUS:  # a worker hides its shards from catalog queries unless told not to
                conn.execute("set citus.override_table_visibility = off")
            index = f"select idx_scan from pg_stat_user_indexes where indexrelname = '{index_name}'"
            before = conn.execute(index).fetchone()[0]
            conn.execute("select count(*) from prism_memory.recall_v3('acme', 'a_b', 't00', %s::vector, 'tea lisbon', "
                         "10, p_across_threads => true)", (str(list(vector)),))
            conn.execute("select pg_stat_force_next_flush()")
        with psycopg.connect(where, autocommit=True) as conn:
            if CITUS:
                conn.execute("set citus.override_table_visibility = off")
            after = conn.execute(index).fetchone()[0]
    finally:
        await stores.close()
    assert after > before, "the travellers' HNSW index was not used"
    assert found / expected >= 0.9, found / expected


@pytest.mark.slow
async def test_over_5000_travellers_a_gate_after_hnsw_never_costs_a_match(pg_dsn):
    """Tombstones and thread policies apply after the HNSW read: when they remove every traveller it found,
    Postgres ranks the travellers exactly after all and still returns min(top_k, matches), as the emulator."""
    embed = create_hash_embedder(TEST_DIMENSIONS)
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    emulator = create_memory_vector_store(TEST_DIMENSIONS)
    old_day, today = datetime(2026, 3, 1, tzinfo=timezone.utc), datetime(2026, 4, 10, tzinfo=timezone.utc)
    user = MemoryConsent(scope="user")
    try:
        near = [f"peanut allergy note {n}" for n in range(5200)]
        far = ["garden tulip", "chess opening", "violin lesson"]
        old = [EntryRecord(f"old-{n:04d}", text, vector, {}, None, None, user)
               for n, (text, vector) in enumerate(zip(near, await embed.embed(near)))]
        fresh = [EntryRecord(f"fresh-{n}", text, vector, {}, None, None, user)
                 for n, (text, vector) in enumerate(zip(far, await embed.embed(far)))]
        answers = {}
        [query] = await embed.embed(["peanut allergy"])
        for name, store in (("emulator", emulator), ("postgres", stores.vector_store)):
            await store.remember_batch([(Scope("acme", "a_b", "old"), old[:2600])], now=old_day)
            await store.remember_batch([(Scope("acme", "a_b", "gone"), old[2600:])], now=old_day)
            await store.remember_batch([(Scope("acme", "a_b", "fresh"), fresh)], now=today)
            await store.remember_batch([(Scope("acme-corp", "a_b", "near"), old[:20])], now=today)  # another tenant
            await store.set_retention_policy(Scope("acme", "a_b", "old"), 30.0, now=today)
            gone = [record.id for record in old[2600:]]
            for start in range(0, len(gone), 64):
                await store.invalidate(Scope("acme", "a_b", "gone"), gone[start : start + 64], "deleted", now=today)
            if name == "postgres":
                with psycopg.connect(pg_dsn, autocommit=True) as conn:
                    conn.execute("analyze prism_memory.semantic_memory")
            result = await store.recall(Scope("acme", "a_b", "reader"), query, "peanut allergy", 3, 0, now=today,
                                        across_threads=True, explain=True)
            answers[name] = ([(hit.thread_id, hit.id, round(hit.score, 6)) for hit in result.hits],
                             result.explanation.removed)
    finally:
        await stores.close()
    assert answers["postgres"] == answers["emulator"]
    assert sorted(hit[1] for hit in answers["postgres"][0]) == ["fresh-0", "fresh-1", "fresh-2"]
