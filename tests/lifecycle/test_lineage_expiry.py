"""A derived entry expires with its sources, at read time, on both backends: when a lineage source
(transitively) passes its ``expires_at``/``ttl`` or a stored retention policy, every entry derived from it
leaves recall (the thread, across threads, grants, adjacency), export and the context gate at that moment,
with no sweep; an entry derived from an unexpired source stays. Look-alike scopes (``a_b``/``a-b``,
``acme``/``acme-corp``) hold the same ids and must not be touched.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import psycopg
from prism_memory import MemoryConsent, MemoryLineage, Scope
from prism_memory.schema import SchemaConfig, migrate
from psycopg.types.json import Jsonb

from parity import Clock

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
USER = MemoryConsent(scope="user")


def seen(result) -> list[str]:
    return sorted(hit.id for hit in result.hits)


async def reads(memory, query: str) -> dict:
    """What every read of ``memory`` returns for ``query``: recall (with its expiry count), recall across
    threads, the thread's and the resource's export, and the context gate."""
    explained = await memory.recall(query, top_k=16, explain=True)
    provider = memory.create_context_provider(working=False)
    scope = memory.config.scope
    return {
        "recall": seen(explained),
        "expired": explained.explanation.removed["expiry"],
        "across": seen(await memory.recall(query, top_k=16, across_threads=True)),
        "export": sorted(record.id for record in (await memory.export_memory(scope)).entries),
        "resource export": sorted(record.id for record in (await memory.export_resource(
            Scope(scope.tenant_id, scope.resource_id))).entries),
        "context": sorted(entry_id for block in await provider.provide(query) for entry_id in block.entry_ids),
    }


async def test_a_chain_derived_from_a_code_with_a_ttl_expires_with_it(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memories = {scope: backend.memory(tenant_id=scope[0], resource_id=scope[1], thread_id="t1", clock=clock)
                    for scope in (("acme", "a_b"), ("acme", "a-b"), ("acme-corp", "a_b"))}
        for (tenant, resource), memory in memories.items():
            ttl = {"ttl": timedelta(hours=1)} if (tenant, resource) == ("acme", "a_b") else {}
            await memory.remember([
                {"id": "code", "text": "login code 4711", "consent": USER, **ttl},
                {"id": "summary", "text": "summary: the login code", "consent": USER,
                 "lineage": MemoryLineage(("code",))},
                {"id": "digest", "text": "digest of the login summary", "consent": USER,
                 "lineage": MemoryLineage(("summary", "never-written"))},
                {"id": "note", "text": "an unrelated login note", "consent": USER},
            ], wait=True)
        states = {}
        for label, delta in (("before", timedelta(minutes=59)), ("at the ttl", timedelta(hours=1))):
            clock.now = T0 + delta
            states[label] = {scope: await reads(memory, "login") for scope, memory in memories.items()}
        return states

    states = await backends.run(scenario)
    everything = ["code", "digest", "note", "summary"]
    for label in ("before", "at the ttl"):
        for scope in (("acme", "a-b"), ("acme-corp", "a_b")):  # look-alikes: nothing of theirs expires
            assert states[label][scope] == {"recall": everything, "expired": 0, "across": everything,
                                            "export": everything, "resource export": everything,
                                            "context": everything}
    assert states["before"][("acme", "a_b")]["recall"] == everything
    assert states["at the ttl"][("acme", "a_b")] == {
        "recall": ["note"], "expired": 3, "across": ["note"], "export": ["note"], "resource export": ["note"],
        "context": ["note"]}


async def test_a_source_written_or_given_a_ttl_after_its_dependents_takes_them_with_it(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1", clock=clock)
        await memory.remember([  # derived first: the sources come later
            {"id": "summary", "text": "summary of the trip plan", "consent": USER,
             "lineage": MemoryLineage(("plan",))},
            {"id": "cycle-a", "text": "trip cycle a", "consent": USER, "lineage": MemoryLineage(("cycle-b", "plan"))},
            {"id": "cycle-b", "text": "trip cycle b", "consent": USER, "lineage": MemoryLineage(("cycle-a",))},
            {"id": "hotel-summary", "text": "summary of the trip hotel", "consent": USER,
             "lineage": MemoryLineage(("hotel",))},
        ], wait=True)
        await memory.remember([{"id": "plan", "text": "trip plan", "consent": USER,
                                "expires_at": T0 + timedelta(hours=2)},
                               {"id": "hotel", "text": "trip hotel", "consent": USER}], wait=True)
        clock.now = T0 + timedelta(hours=1)
        await memory.remember([{"id": "hotel", "text": "trip hotel, booked", "consent": USER,
                                "ttl": timedelta(minutes=30)}], wait=True)  # a ttl given later, shorter
        states = {}
        for label, delta in (("hotel expired", timedelta(minutes=90)), ("plan expired", timedelta(hours=2))):
            clock.now = T0 + delta
            states[label] = await reads(memory, "trip")
        return states

    states = await backends.run(scenario)
    assert states["hotel expired"]["recall"] == ["cycle-a", "cycle-b", "plan", "summary"]
    assert states["hotel expired"]["export"] == ["cycle-a", "cycle-b", "plan", "summary"]
    assert states["plan expired"] == {"recall": [], "expired": 6, "across": [], "export": [], "resource export": [],
                                      "context": []}


async def test_a_retention_policy_takes_out_what_was_derived_from_an_old_source(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1", clock=clock)
        reader = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t2", clock=clock)
        await memory.remember([{"id": "old", "text": "an old diary note", "consent": USER}], wait=True)
        clock.now = T0 + timedelta(days=35)
        await memory.remember([{"id": "fresh", "text": "a fresh diary note", "consent": USER},
                               {"id": "recap", "text": "recap of the old diary note", "consent": USER,
                                "lineage": MemoryLineage(("old", "fresh"))},
                               {"id": "fresh-recap", "text": "recap of the fresh diary note", "consent": USER,
                                "lineage": MemoryLineage(("fresh",))}], wait=True)
        before = await reads(memory, "diary")
        await memory.set_retention_policy(30)  # no sweep: the recap of a 35-day-old note goes with it at once
        after = await reads(memory, "diary")
        across = seen(await reader.recall("diary", top_k=16, across_threads=True))
        swept = await memory.apply_retention()
        return before["recall"], after, across, swept

    before, after, across, swept = await backends.run(scenario)
    assert before == ["fresh", "fresh-recap", "old", "recap"]
    assert after["recall"] == after["export"] == after["context"] == ["fresh", "fresh-recap"]
    assert after["expired"] == 2 and across == ["fresh", "fresh-recap"]
    assert swept == {"deleted": 2, "scanned": 2}


async def test_shared_and_adjacent_entries_expire_with_their_sources(backends):
    async def scenario(backend):
        clock = Clock(T0)
        parent = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="parent", clock=clock)
        child = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="child", clock=clock)
        await parent.remember([
            {"id": "code", "text": "door code 1234", "consent": USER, "ttl": timedelta(minutes=5)},
            {"id": "hint", "text": "hint about the door", "consent": USER, "lineage": MemoryLineage(("code",))},
            {"id": "door", "text": "the door is blue", "consent": USER},
        ], wait=True)
        await parent.share_with("child", ["hint", "door"])
        clock.now = T0 + timedelta(minutes=5)
        shared = seen(await child.recall("door", top_k=8, share_from_parent_thread_id="parent"))
        adjacent = [entry.id for entry in (await parent.recall("blue door", top_k=1, message_range=4)).adjacent]
        return shared, adjacent

    assert await backends.run(scenario) == [["door"], []]


def test_the_upgrade_fills_the_lineage_times_of_entries_stored_before_it(server_dsn):
    """Postgres: entries written at revision 0016 (a code with a ttl, and a chain derived from it listed before
    it) expire through lineage once the database is upgraded, with no write after it."""
    dsn = server_dsn("lineage_times_upgrade")
    config = SchemaConfig(dimensions=4)
    migrate(dsn, config, "0016")
    entries = [("digest", "digest", ["summary"]), ("summary", "summary", ["code"]), ("code", "code", None),
               ("note", "note", None)]
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "select prism_memory.remember_v2(p_tenant_id => 'acme', p_resource_id => 'a_b', p_thread_id => 't1', "
            "p_ids => %s, p_texts => %s, p_embeddings => array_fill('[1,0,0,0]'::vector, array[4]), "
            "p_metadata => %s::jsonb[], p_ttl => array[null, null, '1 hour', null]::interval[], p_now => %s)",
            ([id_ for id_, _, _ in entries], [text for _, text, _ in entries],
             [Jsonb({"_lineage": {"sourceIds": sources}} if sources else {}) for _, _, sources in entries], T0))
    migrate(dsn, config)

    def live(now):
        with psycopg.connect(dsn) as conn:
            return sorted(row[0] for row in conn.execute(
                "select e.id from prism_memory.semantic_memory e where prism_memory.is_live_v2("
                "e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at, '-infinity', %s)", (now,)))

    assert live(T0) == ["code", "digest", "note", "summary"]
    assert live(T0 + timedelta(hours=1)) == ["note"]


async def test_an_entry_and_its_source_rewritten_in_one_batch_take_the_sources_new_times(backends):
    """In one batch, a source rewritten without lineage and an entry derived from it: the entry takes the
    source's times as this batch leaves them (the batch's order does not matter), as two calls would; a
    retention policy reads the same times."""
    async def scenario(backend):
        clock = Clock(T0)
        outcome = {}
        for thread, batch_order in (("t1", ("a", "b")), ("t2", ("b", "a")), ("t3", None)):
            memory = backend.memory(tenant_id="acme", resource_id="user_1", thread_id=thread, clock=clock)
            clock.now = T0
            await memory.remember([{"id": "otp", "text": "one-time code 4711", "ttl": timedelta(minutes=5)}],
                                  wait=True)
            await memory.remember([{"id": "b", "text": "b quotes the code", "lineage": MemoryLineage(("otp",))}],
                                  wait=True)
            entries = {"a": {"id": "a", "text": "a quotes b", "lineage": MemoryLineage(("b",))},
                       "b": {"id": "b", "text": "b stands alone now"}}
            if batch_order is None:  # two calls
                await memory.remember([entries["b"]], wait=True)
                await memory.remember([entries["a"]], wait=True)
            else:
                await memory.remember([entries[key] for key in batch_order], wait=True)
            clock.now = T0 + timedelta(minutes=6)
            outcome[thread] = seen(await memory.recall("code quotes", top_k=8))
        return outcome

    assert await backends.run(scenario) == {"t1": ["a", "b"], "t2": ["a", "b"], "t3": ["a", "b"]}
