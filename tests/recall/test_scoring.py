"""Composite recall scoring, explain and importance at write, on both backends
(seed: "Composite recall scoring (opt-in)", "Importance at write")."""

import math
import random
from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from prism_memory import (
    InvalidEntryError,
    MemoryConsent,
    RecallScoringOptions,
)
from prism_memory.scoring import LEXICAL_WEIGHT

from parity import Clock

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
WORDS = ["coffee", "tea", "garden", "river", "budget", "marathon", "piano", "tax", "dog", "city"]


async def seeded_thread(backend, clock, rng, count=24):
    """Entries written at different times, with and without importance."""
    memory = backend.memory(clock=clock)
    for i in range(count):
        clock.now = T0 + timedelta(hours=rng.randrange(0, 24 * 60), microseconds=rng.randrange(1_000_000))
        words = rng.sample(WORDS, 3)
        importance = rng.choice([None, 0.0, 0.3, 0.9, 1.0, 2.5, -1.0])
        await memory.remember([{"id": f"e{i:02d}", "text": " ".join(words), "importance": importance}], wait=True)
    clock.now = T0 + timedelta(days=61)
    return memory


async def test_random_weights_and_timestamps_rank_identically_on_both_backends(backends):
    async def scenario(backend):
        rng = random.Random(11)
        memory = await seeded_thread(backend, Clock(T0), rng)
        outcomes = []
        for _ in range(30):
            scoring = RecallScoringOptions(
                recency_weight=rng.choice([None, 0.0, rng.random(), 1.0]),
                importance_weight=rng.choice([None, 0.0, rng.random(), 1.0]),
                half_life_ms=rng.choice([3_600_000.0, 7 * 86_400_000.0, 1.5, 1e12]),
            )
            query = " ".join(rng.sample(WORDS, 2))
            result = await memory.recall(query, top_k=rng.choice([1, 3, 8]), scoring=scoring, explain=True)
            outcomes.append((scoring, result))
        return outcomes

    outcomes = await backends.run(scenario)  # ids, order and every component equal to 1e-6
    for scoring, result in outcomes:
        weights = result["explanation"]["hits"][0]["weights"] if result["hits"] else None
        for hit in result["hits"]:
            if weights is None:
                assert hit["recency"] is None
                continue
            assert 0 <= hit["importance"] <= 1
            recency = 0.0 if hit["recency"] is None else hit["recency"]
            base = hit["similarity"] + LEXICAL_WEIGHT * hit["lexical"]
            expected = weights["similarity"] * base + weights["recency"] * recency + weights["importance"] * hit["importance"]
            assert math.isclose(hit["score"], expected, abs_tol=1e-9)
        scores = [hit["score"] for hit in result["hits"]]
        assert scores == sorted(scores, reverse=True)


async def test_weights_normalise_as_the_seed_says(backends):
    async def scenario(backend):
        memory = await seeded_thread(backend, Clock(T0), random.Random(3), count=6)
        explained = {}
        for name, scoring in {
            "under one": RecallScoringOptions(0.3, 0.2, 1000.0),
            "overshoot": RecallScoringOptions(0.9, 0.6, 1000.0),
            "importance only": RecallScoringOptions(importance_weight=1.0),
        }.items():
            result = await memory.recall("coffee garden", top_k=3, scoring=scoring, explain=True)
            explained[name] = result.explanation.hits[0].weights
        return explained

    weights = await backends.run(scenario)
    assert weights["under one"] == pytest.approx({"similarity": 0.5, "recency": 0.3, "importance": 0.2})
    assert weights["overshoot"] == pytest.approx({"similarity": 0.0, "recency": 0.6, "importance": 0.4})
    assert weights["importance only"] == {"similarity": 0.0, "recency": 0.0, "importance": 1.0}


async def test_without_scoring_or_with_zero_weights_the_order_is_plain_recall(backends):
    async def scenario(backend):
        memory = await seeded_thread(backend, Clock(T0), random.Random(5))
        plain = await memory.recall("river budget piano", top_k=8)
        zero = await memory.recall("river budget piano", top_k=8, scoring=RecallScoringOptions(0.0, 0.0, 60_000.0))
        return plain, zero

    plain, zero = await backends.run(scenario)
    assert [hit["id"] for hit in plain["hits"]] == [hit["id"] for hit in zero["hits"]]
    assert all(hit["recency"] is None for hit in plain["hits"]) and plain["explanation"] is None
    assert [hit["score"] for hit in plain["hits"]] == pytest.approx([hit["score"] for hit in zero["hits"]])


async def test_recency_and_importance_move_entries_up(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memory = backend.memory(clock=clock)
        await memory.remember([{"id": "old", "text": "coffee order", "importance": 0.1}], wait=True)
        clock.now = T0 + timedelta(days=30)
        await memory.remember([{"id": "new", "text": "coffee order", "importance": 0.1}], wait=True)
        await memory.remember([{"id": "vital", "text": "coffee order"}], wait=True)  # neutral importance 1.0
        day = 86_400_000.0
        return {
            "plain": [hit.id for hit in (await memory.recall("coffee order")).hits],
            "recent": [hit.id for hit in (await memory.recall("coffee order", scoring=RecallScoringOptions(0.5, half_life_ms=day))).hits],
            "important": [hit.id for hit in (await memory.recall("coffee order", scoring=RecallScoringOptions(importance_weight=0.5))).hits],
        }

    orders = await backends.run(scenario)
    assert orders["plain"] == ["old", "new", "vital"]  # equal scores: by sequence
    assert orders["recent"][-1] == "old" and orders["important"][0] == "vital"


BAD_SCORING = [
    RecallScoringOptions(recency_weight=-0.1, half_life_ms=1.0),
    RecallScoringOptions(recency_weight=1.0001, half_life_ms=1.0),
    RecallScoringOptions(importance_weight=float("nan")),
    RecallScoringOptions(importance_weight=float("inf")),
    RecallScoringOptions(importance_weight=True),
    RecallScoringOptions(importance_weight="0.5"),
    RecallScoringOptions(recency_weight=0.5),
    RecallScoringOptions(recency_weight=0.5, half_life_ms=0.0),
    RecallScoringOptions(recency_weight=0.5, half_life_ms=-5.0),
    RecallScoringOptions(recency_weight=0.5, half_life_ms=float("inf")),
    RecallScoringOptions(importance_weight=0.5, half_life_ms=float("nan")),
    RecallScoringOptions(importance_weight=10**400),
    {"recency_weight": 0.5},
]


@pytest.mark.parametrize("scoring", BAD_SCORING, ids=[repr(item) for item in BAD_SCORING])
async def test_invalid_scoring_raises_a_typed_error_on_both_backends(backends, scoring):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": "a", "text": "coffee"}], wait=True)
        try:
            await memory.recall("coffee", scoring=scoring)
        except Exception as exc:
            return type(exc).__name__
        return "no error"

    assert await backends.run(scenario) == "InvalidScoringError"


def test_the_sql_function_checks_scoring_for_direct_callers(pg_dsn):
    vector = "array_fill(1, array[64])::vector"
    call = f"select count(*) from prism_memory.recall_v3('t', 'r', 'th', {vector}, 'q', p_recency_weight => %s, p_half_life_ms => %s)"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for weight, half_life in ((1.5, 10.0), (0.5, None), (0.5, 0.0), (float("nan"), 10.0)):
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(call, (weight, half_life))
            assert caught.value.sqlstate == "PM015"
        assert conn.execute(call, (0.5, 10.0)).fetchone() == (0,)


async def test_explain_counts_what_each_gate_removed(backends):
    async def scenario(backend):
        parent = backend.memory(thread_id="parent")
        await parent.remember([{"id": f"p{i}", "text": f"plan {i}", "consent": MemoryConsent()} for i in range(4)], wait=True)
        await parent.share_with("child", ["p0", "p1"])
        child = backend.memory(thread_id="child")
        await child.remember([
            {"id": "ok", "text": "plan ok", "consent": MemoryConsent()},
            {"id": "legacy", "text": "plan legacy"},
            {"id": "hidden", "text": "plan hidden", "consent": MemoryConsent(visible=False)},
            {"id": "held", "text": "plan held", "consent": MemoryConsent()},
            {"id": "source", "text": "plan source", "consent": MemoryConsent()},
            {"id": "derived", "text": "plan derived", "consent": MemoryConsent(), "lineage": {"source_ids": ["source"]}},
        ], wait=True)
        await child.forget(["held"], hold=True)
        await child.set_consent("source", visible=False)
        await parent.set_consent("p1", visible=False)
        result = await child.recall("plan", top_k=32, require_consent=True, share_from_parent_thread_id="parent",
                                    explain=True)
        return sorted(hit.id for hit in result.hits), result.explanation.removed

    hits, removed = await backends.run(scenario)
    assert hits == ["ok", "p0"]
    # p2, p3 were never shared: not counted. hold: held; consent: legacy, hidden, source, p1; invalidation: derived
    assert removed == {"scope": 0, "hold": 1, "consent": 4, "invalidation": 1, "expiry": 0, "selection": 0}


async def test_importance_from_runs_once_at_write_on_the_redacted_reflection(backends):
    async def scenario(backend):
        seen = []

        def importance_from(reflection):
            seen.append(reflection)
            return reflection["mentions"] / 10 if reflection["mentions"] >= 0 else float("nan")

        memory = backend.memory(importance_from=importance_from, secrets=["sk-123"])
        await memory.remember([
            {"id": "r", "text": "often mentioned", "reflection": {"mentions": 7, "note": "key sk-123"}},
            {"id": "big", "text": "mentioned a lot", "reflection": {"mentions": 40}},
            {"id": "direct", "text": "given directly", "importance": 0.2, "reflection": {"mentions": 9}},
            {"id": "none", "text": "no signal"},
        ], wait=True)
        for entry_id in ("r", "big", "direct", "none"):
            await memory.set_consent(entry_id, visible=True)
        calls_after_write = len(seen)
        result = await memory.recall("mentioned directly signal", top_k=8, scoring=RecallScoringOptions(importance_weight=1.0))
        importance = {hit.id: hit.importance for hit in result.hits}
        page = await memory.export_memory(memory.config.scope)
        try:
            await memory.remember([{"id": "bad", "text": "bad hook", "reflection": {"mentions": -1}}], wait=True)
        except InvalidEntryError:
            rejected = "rejected"
        stored = sorted(record.id for record in (await memory.export_memory(memory.config.scope)).entries)
        return calls_after_write, len(seen), seen[0], importance, [e.metadata for e in page.entries], rejected, stored

    calls_after_write, calls, first, importance, metadata, rejected, stored = await backends.run(scenario)
    assert (calls_after_write, calls) == (2, 3)  # not for a direct importance, never at recall, once for "bad"
    assert first == {"mentions": 7, "note": "key [REDACTED]"}
    assert importance == {"r": 0.7, "big": 1.0, "direct": 0.2, "none": 1.0}
    assert all("mentions" not in str(meta) for meta in metadata)  # the reflection is never persisted
    assert rejected == "rejected" and "bad" not in stored


async def test_explain_says_nothing_about_threads_that_shared_nothing(backends):
    async def scenario(backend):
        other = backend.memory(thread_id="other")
        await other.remember([{"id": f"o{i}", "text": "coffee"} for i in range(6)], wait=True)
        await other.forget(["o0"], hold=True)
        reader = backend.memory(thread_id="reader")
        result = await reader.recall("coffee", share_from_parent_thread_id="other", explain=True)
        return result.explanation.removed

    assert await backends.run(scenario) == {"scope": 0, "hold": 0, "consent": 0, "invalidation": 0, "expiry": 0, "selection": 0}


async def test_tiny_and_huge_half_lives_agree_on_both_backends(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memory = backend.memory(clock=clock)
        await memory.remember([{"id": "a", "text": "coffee"}], wait=True)
        clock.now = T0 + timedelta(days=3)
        return [
            [(hit.id, hit.recency) for hit in (await memory.recall("coffee", scoring=RecallScoringOptions(0.5, None, half_life))).hits]
            for half_life in (5e-324, 1e-310, 1e-3, 1e300, 1.7976931348623157e308)
        ]

    outcomes = await backends.run(scenario)
    assert [recency for [(_, recency)] in outcomes] == [0.0, 0.0, 0.0, 1.0, 1.0]
