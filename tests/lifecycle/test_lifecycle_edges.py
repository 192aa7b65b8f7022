"""Lifecycle edge cases, each pinned on both backends."""

import asyncio
import base64
import json
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from prism_memory import (
    InvalidCursorError,
    InvalidEntryError,
    MemoryConsent,
    create_hash_embedder,
    create_memory,
    create_postgres_memory_stores,
)

from conftest import TEST_DIMENSIONS
from parity import Clock, Raised

T0 = datetime(2026, 3, 8, 6, 0, tzinfo=timezone.utc)



def ids(result):
    return sorted(hit.id for hit in result.hits)


async def test_one_batch_chain_from_a_revoked_entry_is_invalid_all_the_way(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": "a", "text": "root fact", "consent": MemoryConsent(revoked_at=T0)}], wait=True)
        await memory.remember(
            [{"id": "c", "text": "root fact third", "lineage": {"source_ids": ["b"]}},
             {"id": "b", "text": "root fact second", "lineage": {"source_ids": ["a"]}},
             {"id": "d", "text": "root fact unrelated"}],
            wait=True,
        )
        return ids(await memory.recall("root fact", top_k=10))

    assert await backends.run(scenario) == ["d"]


async def test_lifecycle_calls_wait_for_background_writes(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": "x", "text": "background note", "consent": MemoryConsent()}])
        deleted = await memory.forget(["x"])
        await memory.remember([{"id": "y", "text": "background note two", "consent": MemoryConsent()}])
        revoked = (await memory.set_consent("y", visible=False)).consent.visible
        return deleted, revoked, ids(await memory.recall("background note"))

    assert await backends.run(scenario) == [1, False, []]


async def test_redaction_never_rewrites_lineage_ids_but_redacts_reasons(backends):
    async def scenario(backend):
        memory = backend.memory(redactor=lambda text: "".join("#" if ch.isdigit() else ch for ch in text))
        await memory.remember(
            [{"id": "msg-2024", "text": "met on 2024-01-01", "consent": MemoryConsent()},
             {"id": "fact", "text": "they met in 2024",
              "lineage": {"source_ids": ["msg-2024"], "reason": "summary of 2024"}}],
            wait=True,
        )
        [fact] = [hit for hit in (await memory.recall("met", top_k=5)).hits if hit.id == "fact"]
        await memory.set_consent("msg-2024", visible=False)
        return fact.metadata, ids(await memory.recall("met", top_k=5))

    metadata, after = await backends.run(scenario)
    assert metadata == {"_lineage": {"sourceIds": ["msg-2024"], "reason": "summary of ####"}}
    assert after == []


async def test_the_edge_cap_counts_edges_not_paths(backends):
    async def scenario(backend):
        memory = backend.memory(thread_id="lattice")
        # two columns, eight rows, every node derived from both nodes of the row above: 30 edges, 2^8 paths
        entries = [{"id": "root", "text": "lattice root"}]
        previous = ["root"]
        for row in range(1, 9):
            current = [f"r{row}a", f"r{row}b"]
            entries += [{"id": node, "text": f"lattice {node}", "lineage": {"source_ids": previous}} for node in current]
            previous = current
        await memory.remember(entries, wait=True)
        return await memory.forget(["root"]), ids(await memory.recall("lattice", top_k=32))

    assert await backends.run(scenario) == [1, []]


async def test_times_out_of_range_or_naive_are_refused_and_retention_uses_24_hour_days(backends):
    async def far_future(backend):
        memory = backend.memory()
        await memory.remember([{"id": "x", "text": "x"}], wait=True)
        await memory.set_consent("x", granted_at=datetime(9999, 12, 31, 23, tzinfo=ZoneInfo("America/New_York")))

    assert await backends.run(far_future) == Raised(InvalidEntryError)

    async def across_dst(backend):
        new_york = ZoneInfo("America/New_York")
        clock = Clock(datetime(2026, 3, 7, 12, 0, tzinfo=new_york))
        memory = backend.memory(clock=clock)
        await memory.remember([{"id": "x", "text": "before the switch"}], wait=True)
        clock.now = datetime(2026, 3, 8, 12, 30, tzinfo=new_york)  # 23.5 real hours later (DST began)
        return await memory.apply_retention(max_age_days=1)

    assert await backends.run(across_dst) == {"deleted": 0, "scanned": 0}


async def test_rewriting_an_entry_keeps_its_creation_time(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memory = backend.memory(clock=clock)
        await memory.remember([{"id": "x", "text": "first"}], wait=True)
        clock.now = T0 + timedelta(days=10)
        await memory.remember([{"id": "x", "text": "rewritten"}], wait=True)
        clock.now = T0 + timedelta(days=11)
        return await memory.apply_retention(max_age_days=5)

    assert await backends.run(scenario) == {"deleted": 1, "scanned": 1}


def tampered(payload) -> str:
    return "c1." + base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()


@pytest.mark.parametrize(
    "cursor",
    [tampered([2**63, "a"]), tampered([1, "a\u0000b"]), tampered([1, "x" * 600]), tampered([True, "a"]),
     "c1." + base64.urlsafe_b64encode(b"[" * 5000).decode(), "c1.%%%", 17],
)
async def test_tampered_cursors_are_refused(backends, cursor):
    async def scenario(backend):
        memory = backend.memory()
        await memory.export_memory(memory.config.scope, cursor=cursor)

    assert await backends.run(scenario) == Raised(InvalidCursorError)


async def test_null_lineage_is_refused_and_a_corrected_record_can_be_written_back(backends):
    async def null_lineage(backend):
        await backend.memory().remember([{"id": "x", "text": "x", "metadata": {"_lineage": None}}], wait=True)

    assert await backends.run(null_lineage) == Raised(InvalidEntryError)

    async def round_trip(backend):
        memory = backend.memory()
        await memory.remember([{"id": "x", "text": "before", "consent": MemoryConsent()}], wait=True)
        corrected = await memory.correct("x", "after")
        await memory.remember([{"id": "x", "text": corrected.text, "metadata": corrected.metadata}], wait=True)
        return ids(await memory.recall("after"))

    assert await backends.run(round_trip) == ["x"]


async def test_reembed_skips_entries_whose_text_changed_meanwhile(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": "x", "text": "old wrong text"}], wait=True)
        await memory.correct("x", "new right text")
        stale = await memory.config.embedder.embed(["old wrong text"])
        return await memory.config.vector_store.reembed(memory.config.scope, ["x"], ["old wrong text"], stale)

    assert await backends.run(scenario) == 0


async def test_deleted_sequences_are_not_reused_so_export_cursors_stay_stable(backends):
    async def scenario(backend):
        memory = backend.memory()
        await memory.remember([{"id": f"m{i}", "text": f"note {i}", "consent": MemoryConsent()} for i in (1, 2, 3)], wait=True)
        page = await memory.export_memory(memory.config.scope, limit=3)
        await memory.forget(["m3"])
        await memory.remember([{"id": "a0", "text": "new note", "consent": MemoryConsent()}], wait=True)
        later = await memory.export_memory(memory.config.scope, cursor=page.next_cursor)
        return [(record.id, record.sequence) for record in later.entries]

    assert await backends.run(scenario) == [["a0", 4]]


async def test_concurrent_revoke_and_derived_write_never_leak(pg_dsn):
    """Two clients: one revokes the source while the other writes a fact derived from it."""
    first = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    second = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    try:
        leaks = 0
        for round_number in range(20):
            thread = f"race-{round_number}"
            embedder = create_hash_embedder(TEST_DIMENSIONS)
            owner = create_memory(tenant_id="t", resource_id="r", thread_id=thread, embedder=embedder,
                                  vector_store=first.vector_store, working_store=first.working_store)
            writer = create_memory(tenant_id="t", resource_id="r", thread_id=thread, embedder=embedder,
                                   vector_store=second.vector_store, working_store=second.working_store)
            await owner.remember([{"id": "src", "text": "source fact", "consent": MemoryConsent()}], wait=True)
            await asyncio.gather(
                owner.set_consent("src", visible=False),
                writer.remember([{"id": "fact", "text": "derived fact", "lineage": {"source_ids": ["src"]}}], wait=True),
            )
            leaks += len((await owner.recall("fact", top_k=5)).hits)
    finally:
        await first.close()
        await second.close()
    assert leaks == 0
