"""The store-level API answers the same on both backends: what a store returns, called directly.

The suite's Postgres sessions run in a TimeZone far from UTC (tests/conftest.py), so a time that came
back in the session's offset, or a naive ``now`` read in it, would show here.
"""

import math
from datetime import datetime, timedelta, timezone

from prism_memory import MemoryConsent, RagChunk
from prism_memory.types import ConsentChange, EntryRecord, Scope

THREAD = Scope("t1", "user-ada", "thread-1")
ONE = [1.0] + [0.0] * 63
TOKYO = timezone(timedelta(hours=9))
NOW = datetime(2026, 1, 1, 15, 0, tzinfo=TOKYO)  # 06:00Z
GRANTED = datetime(2025, 12, 31, 23, 30, tzinfo=timezone(timedelta(hours=-3, minutes=-30)))


def times(*values):
    """Each datetime as (instant, tzinfo): two backends agree only if both match."""
    return [(value, value.tzinfo) for value in values]


async def test_store_calls_return_times_in_utc_and_stamp_the_instant_given(backends):
    outcomes = []
    for backend in backends.each:
        store, working = backend.vector_store, backend.working_store
        consent = MemoryConsent(granted_at=GRANTED)
        await store.remember(THREAD, [EntryRecord("a", "a note", ONE, {}, None, None, consent)], now=NOW)
        await store.remember_batch([(THREAD, [EntryRecord("b", "another note", ONE, {}, None, None)])], now=NOW)
        [record, other] = await store.list_by_thread(THREAD, None, 10)
        revoked, _ = await store.set_consent(THREAD, "b", ConsentChange(revoked_at=GRANTED), now=NOW + timedelta(hours=1))
        document = await working.update_working(THREAD, {"a": 1}, None)
        await store.upsert("t1", "kb", [RagChunk("c1", "s1", "chunk text", ONE)])
        [chunk] = await store.get_by_source("t1", "kb", "s1")
        outcomes.append(times(
            record.created_at, record.updated_at, record.consent.granted_at, other.created_at,
            revoked.updated_at, revoked.consent.revoked_at, document.created_at, chunk.created_at,
        ))
    emulated, postgres = outcomes
    for (instant, zone), (pg_instant, pg_zone) in zip(emulated[:6], postgres[:6]):
        assert zone is timezone.utc and pg_zone is timezone.utc, (zone, pg_zone)
        assert instant == pg_instant
    assert emulated[0][0] == datetime(2026, 1, 1, 6, 0, tzinfo=timezone.utc)
    assert all(zone is timezone.utc for _, zone in emulated[6:] + postgres[6:])  # stamped by each store's clock


async def test_negative_zero_comes_back_as_jsonb_gives_it(backends):
    outcomes = []
    for backend in backends.each:
        store, working = backend.vector_store, backend.working_store
        metadata = {"x": -0.0, "list": [-0.0, 1.5]}
        await store.remember(THREAD, [EntryRecord("a", "a note", ONE, metadata, None, None)], now=NOW)
        [record] = await store.list_by_thread(THREAD, None, 10)
        [hit] = (await store.recall(THREAD, ONE, "note", 4, 0, now=NOW)).hits
        document = await working.update_working(THREAD, {"x": -0.0}, None)
        await store.upsert("t1", "kb", [RagChunk("c1", "s1", "chunk text", ONE, metadata={"x": -0.0})])
        [chunk] = await store.get_by_source("t1", "kb", "s1")
        values = [record.metadata["x"], *record.metadata["list"], hit.metadata["x"], document.data["x"], chunk.metadata["x"]]
        outcomes.append([(value, math.copysign(1.0, value)) for value in values])
    assert outcomes[0] == outcomes[1] == [(0.0, 1.0), (0.0, 1.0), (1.5, 1.0), (0.0, 1.0), (0.0, 1.0), (0.0, 1.0)]
