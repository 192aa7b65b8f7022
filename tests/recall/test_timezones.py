"""Results do not depend on the database session's TimeZone.

The same time-dependent scenario runs on the emulator and on Postgres sessions set to
zones far from UTC, with half-hour and 45-minute offsets and daylight saving."""

from datetime import datetime, timedelta, timezone

import pytest
from prism_memory import MemoryConsent, RecallScoringOptions

from conftest import TEST_CONFIG
from parity import Backends, Clock

T0 = datetime(2026, 3, 29, 0, 30, tzinfo=timezone.utc)  # a daylight-saving night in Europe


async def time_scenario(backend):
    clock = Clock(T0)
    memory = backend.memory(clock=clock)
    await memory.remember([
        {"id": "a", "text": "early note", "consent": MemoryConsent(granted_at=T0 - timedelta(hours=5))},
        {"id": "b", "text": "late note", "consent": MemoryConsent()},
    ], wait=True)
    await memory.share_with("child", ["a"], expires_at=T0 + timedelta(hours=1, minutes=30))
    clock.now = T0 + timedelta(days=2, hours=23)
    await memory.remember([{"id": "c", "text": "newest note", "consent": MemoryConsent()}], wait=True)
    child = backend.memory(thread_id="child", clock=clock)
    outcome = {
        "scored": await memory.recall("note", scoring=RecallScoringOptions(0.5, half_life_ms=86_400_000.0)),
        "shared_after_expiry": await child.recall("note", share_from_parent_thread_id="thread-1"),
        "export": [(record.id, record.consent.granted_at, record.created_at) for record in
                   (await memory.export_memory(memory.config.scope)).entries],
    }
    outcome["retention"] = await memory.apply_retention(max_age_days=2.9)
    outcome["left"] = [hit.id for hit in (await memory.recall("note", top_k=8)).hits]
    return outcome


@pytest.mark.parametrize("zone", ["Pacific/Chatham", "America/St_Johns", "Asia/Kathmandu", "Europe/Berlin"])
async def test_time_rules_are_the_same_in_every_session_time_zone(pg_dsn, zone):
    separator = "&" if "?" in pg_dsn else "?"
    dsn = f"{pg_dsn}{separator}options=-c%20TimeZone%3D{zone.replace('/', '%2F')}"
    async with Backends(dsn, TEST_CONFIG) as backends:
        outcome = await backends.run(time_scenario)
    assert [hit["id"] for hit in outcome["scored"]["hits"]][0] == "c"
    assert outcome["shared_after_expiry"]["hits"] == []
    assert outcome["export"][0][1] == T0 - timedelta(hours=5)
    assert outcome["retention"] == {"deleted": 2, "scanned": 2} and outcome["left"] == ["c"]


def test_the_session_really_runs_in_the_zone(pg_dsn):
    import psycopg

    separator = "&" if "?" in pg_dsn else "?"
    with psycopg.connect(f"{pg_dsn}{separator}options=-c%20TimeZone%3DPacific%2FChatham") as conn:
        assert conn.execute("show timezone").fetchone() == ("Pacific/Chatham",)
        assert conn.execute("select now()").fetchone()[0].utcoffset() != timedelta(0)


def test_the_whole_suite_runs_outside_utc(pg_dsn):
    import os
    import time

    import psycopg

    from conftest import SESSION_TIMEZONE

    if os.environ.get("PRISM_TEST_POSTGRES_URL"):
        pytest.skip("an external server keeps its own TimeZone")
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("show timezone").fetchone() == (SESSION_TIMEZONE,)
    assert time.localtime().tm_gmtoff == 5 * 3600 + 45 * 60  # Asia/Kathmandu
