"""Recall across a resource's threads (``across_threads=True``), governed by consent scope, on both backends.

Look-alike scopes throughout (tenants ``acme``/``acme-corp``, resources ``a_b``/``a-b`` and the derived
``a_b/agent:helper``), and every scope's entries have ids of their own, so a leak cannot hide behind an
id that is right in both places.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from prism_memory import LimitExceededError, MemoryConsent, MemoryLineage, RecallScoringOptions, Scope
from prism_memory.schema import SchemaConfig, migrate

from parity import Backends, Clock, Raised

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
USER = MemoryConsent(scope="user")
PROFILE = MemoryConsent(scope="profile")
THREAD = MemoryConsent(scope="thread")


def entries(prefix: str) -> list[dict]:
    """One thread's entries, every id prefixed: each consent scope, and each gate that must still apply."""
    return [
        {"id": f"{prefix}-user", "text": "garden plans for the spring", "consent": USER},
        {"id": f"{prefix}-profile", "text": "garden plans with tomatoes", "consent": PROFILE},
        {"id": f"{prefix}-thread", "text": "garden plans kept in this thread", "consent": THREAD},
        {"id": f"{prefix}-legacy", "text": "garden plans written without consent"},
        {"id": f"{prefix}-hidden", "text": "garden plans nobody may see", "consent": MemoryConsent(scope="user", visible=False)},
        {"id": f"{prefix}-revoked", "text": "garden plans revoked later", "consent": USER},
        {"id": f"{prefix}-held", "text": "garden plans under legal hold", "consent": USER},
        {"id": f"{prefix}-derived", "text": "garden plans derived from the revoked one", "consent": USER,
         "lineage": MemoryLineage((f"{prefix}-revoked",))},
    ]


async def populate(backend, clock=None):
    """Tenant acme, resource a_b: threads t1 (the reader's), t2 and t3; look-alike scopes around it."""
    memories = {}
    for tenant, resource, thread in [("acme", "a_b", "t1"), ("acme", "a_b", "t2"), ("acme", "a_b", "t3"),
                                     ("acme", "a-b", "t2"), ("acme-corp", "a_b", "t2")]:
        memory = backend.memory(tenant_id=tenant, resource_id=resource, thread_id=thread, clock=clock)
        prefix = f"{tenant}.{resource}.{thread}"
        await memory.remember(entries(prefix), wait=True)
        await memory.set_consent(f"{prefix}-revoked", visible=False)
        await memory.forget([f"{prefix}-held"], hold=True)
        memories[prefix] = memory
    reader = memories["acme.a_b.t1"]
    agent = reader.child("helper")  # resource a_b/agent:helper: derived, so never searched
    await agent.remember([{"id": "agent-user", "text": "garden plans of the helper agent", "consent": USER}], wait=True)
    return reader, memories


def ids(result) -> list[str]:
    return sorted(f"{hit.thread_id}:{hit.id}" for hit in result.hits)


async def test_across_threads_returns_own_entries_and_what_consent_lets_travel(backends):
    async def scenario(backend):
        reader, _ = await populate(backend)
        return {
            "thread": ids(await reader.recall("garden plans", top_k=32)),
            "across": ids(await reader.recall("garden plans", top_k=32, across_threads=True)),
            "strict": ids(await reader.recall("garden plans", top_k=32, across_threads=True, require_consent=True)),
        }

    outcome = await backends.run(scenario)
    own = ["t1:acme.a_b.t1-legacy", "t1:acme.a_b.t1-profile", "t1:acme.a_b.t1-thread", "t1:acme.a_b.t1-user"]
    assert outcome["thread"] == own
    travelled = [f"{thread}:acme.a_b.{thread}-{scope}" for thread in ("t2", "t3") for scope in ("profile", "user")]
    assert outcome["across"] == sorted(own + travelled)
    assert outcome["strict"] == sorted([hit for hit in own if not hit.endswith("legacy")] + travelled)


async def test_hits_carry_their_thread_and_top_k_keeps_its_cap(backends):
    async def scenario(backend):
        reader, _ = await populate(backend)
        result = await reader.recall("garden plans for the spring", top_k=3, across_threads=True)
        capped = await reader.recall("garden plans", top_k=32, across_threads=True)
        return [(hit.resource_id, hit.thread_id, hit.id) for hit in result.hits], len(capped.hits)

    hits, count = await backends.run(scenario)
    # The same text in three threads: equal scores and sequences, ordered by id.
    assert hits == [["a_b", "t1", "acme.a_b.t1-user"], ["a_b", "t2", "acme.a_b.t2-user"], ["a_b", "t3", "acme.a_b.t3-user"]]
    assert count == 8

    async def over_cap(backend):
        reader, _ = await populate(backend)
        return await reader.recall("garden", top_k=33, across_threads=True)

    assert await backends.run(over_cap) == Raised(LimitExceededError)


async def test_equal_ids_and_sequences_in_two_threads_are_two_hits(backends):
    async def scenario(backend):
        one = backend.memory(resource_id="a_b", thread_id="t1")
        two = backend.memory(resource_id="a_b", thread_id="t2")
        await one.remember([{"id": "m1", "text": "tea with lemon", "consent": USER, "sequence": 1}], wait=True)
        await two.remember([{"id": "m1", "text": "tea with lemon", "consent": USER, "sequence": 1}], wait=True)
        result = await one.recall("tea with lemon", across_threads=True, explain=True)
        return [(hit.thread_id, hit.id) for hit in result.hits], result.explanation.removed

    hits, removed = await backends.run(scenario)
    assert hits == [["t1", "m1"], ["t2", "m1"]]
    assert removed == {"scope": 0, "hold": 0, "consent": 0, "invalidation": 0, "expiry": 0, "selection": 0}


async def test_set_consent_changes_how_far_an_entry_travels_at_the_next_recall(backends):
    async def scenario(backend):
        reader, memories = await populate(backend)
        other = memories["acme.a_b.t2"]
        seen = []
        for change in ({"scope": "user"}, {"scope": "profile"}, {"scope": "thread"}, {"scope": "user"}):
            await other.set_consent("acme.a_b.t2-legacy", **change)
            result = await reader.recall("written without consent", top_k=32, across_threads=True)
            seen.append("acme.a_b.t2-legacy" in {hit.id for hit in result.hits})
        await other.set_consent("acme.a_b.t2-user", scope="thread")
        result = await reader.recall("garden plans for the spring", top_k=32, across_threads=True)
        return seen, "acme.a_b.t2-user" in {hit.id for hit in result.hits}

    assert await backends.run(scenario) == [[True, True, False, True], False]


async def test_adjacent_entries_come_from_each_hits_own_thread_and_obey_consent(backends):
    async def scenario(backend):
        reader = backend.memory(resource_id="a_b", thread_id="t1")
        other = backend.memory(resource_id="a_b", thread_id="t2")
        await reader.remember([{"id": "r1", "text": "breakfast notes", "sequence": 1},
                               {"id": "r2", "text": "our trip to Porto in May", "consent": USER, "sequence": 2}], wait=True)
        await other.remember([
            {"id": "o1", "text": "booked a hotel", "consent": USER, "sequence": 1},
            {"id": "o2", "text": "private aside before the trip", "consent": THREAD, "sequence": 2},
            {"id": "o3", "text": "the trip to Lisbon in June", "consent": USER, "sequence": 3},
            {"id": "o4", "text": "rented a car", "consent": PROFILE, "sequence": 4},
            {"id": "o5", "text": "legacy aside", "sequence": 5},
        ], wait=True)
        result = await reader.recall("trip to Lisbon in June", top_k=1, message_range=2, across_threads=True)
        return ([(hit.thread_id, hit.id) for hit in result.hits],
                [(entry.thread_id, entry.id, entry.sequence) for entry in result.adjacent])

    hits, adjacent = await backends.run(scenario)
    assert hits == [["t2", "o3"]]
    # o2 (scope thread) and o5 (legacy) sit next to the hit but stay in their thread; r2 has sequence 2 too.
    assert adjacent == [["t2", "o1", 1], ["t2", "o4", 4]]


async def test_explain_counts_each_gates_removals_across_threads(backends):
    async def scenario(backend):
        reader, _ = await populate(backend)
        thread = await reader.recall("garden plans", top_k=32, explain=True)
        across = await reader.recall("garden plans", top_k=32, explain=True, across_threads=True)
        strict = await reader.recall("garden plans", top_k=32, explain=True, across_threads=True, require_consent=True)
        return thread.explanation.removed, across.explanation.removed, strict.explanation.removed

    thread, across, strict = await backends.run(scenario)
    # Each thread: hidden and revoked (consent), held (hold), derived from the revoked one (invalidation).
    assert thread == {"scope": 0, "hold": 1, "consent": 2, "invalidation": 1, "expiry": 0, "selection": 0}
    # t2 and t3 add their thread-scoped and legacy entries under scope, and their own consent, hold and tombstones.
    assert across == {"scope": 4, "hold": 3, "consent": 6, "invalidation": 3, "expiry": 0, "selection": 0}
    assert strict == {"scope": 4, "hold": 3, "consent": 7, "invalidation": 3, "expiry": 0, "selection": 0}


async def test_composite_scoring_ranks_across_threads(backends):
    async def scenario(backend):
        clock = Clock(T0)
        reader = backend.memory(resource_id="a_b", thread_id="t1", clock=clock)
        other = backend.memory(resource_id="a_b", thread_id="t2", clock=clock)
        await reader.remember([{"id": "r1", "text": "coffee order", "consent": USER, "importance": 0.1}], wait=True)
        await other.remember([{"id": "o1", "text": "coffee order", "consent": USER, "importance": 0.9}], wait=True)
        result = await reader.recall("coffee order", across_threads=True,
                                     scoring=RecallScoringOptions(importance_weight=0.5), explain=True)
        return [(hit.thread_id, hit.id, hit.importance) for hit in result.hits]

    assert await backends.run(scenario) == [["t2", "o1", 0.9], ["t1", "r1", 0.1]]


async def test_share_grants_and_across_threads_together_name_each_entry_once(backends):
    async def scenario(backend):
        reader = backend.memory(resource_id="a_b", thread_id="t1")
        parent = backend.memory(resource_id="a_b", thread_id="t2")
        await parent.remember([{"id": "p-user", "text": "shared plan", "consent": USER},
                               {"id": "p-thread", "text": "shared plan kept here", "consent": THREAD}], wait=True)
        await parent.share_with("t1", ["p-user", "p-thread"])
        result = await reader.recall("shared plan", top_k=32, across_threads=True, share_from_parent_thread_id="t2",
                                     explain=True)
        return [(hit.thread_id, hit.id) for hit in result.hits], result.explanation.removed

    hits, removed = await backends.run(scenario)
    assert hits == [["t2", "p-user"], ["t2", "p-thread"]]  # the grant lets the thread-scoped one in
    assert removed == {"scope": 0, "hold": 0, "consent": 0, "invalidation": 0, "expiry": 0, "selection": 0}


async def test_the_context_provider_recalls_across_threads(backends):
    async def scenario(backend):
        reader, _ = await populate(backend)
        plain = reader.create_context_provider(working=False, top_k=32)
        across = reader.create_context_provider(working=False, top_k=32, across_threads=True)
        return [list(block.entry_ids) for block in await plain.provide("garden plans")], \
               [sorted(block.entry_ids) for block in await across.provide("garden plans")]

    plain, across = await backends.run(scenario)
    assert len(plain[0]) == 4 and len(across[0]) == 8
    assert "acme.a_b.t2-user" in across[0] and "acme.a_b.t2-thread" not in across[0]


async def test_across_threads_must_be_a_bool(backends):
    async def facade(backend):
        await backend.memory().recall("q", across_threads=1)

    async def store(backend):
        await backend.vector_store.recall(Scope("acme", "a_b", "t1"), [1.0] * 64, "q", 8, 0, across_threads="yes")

    assert await backends.run(facade) == Raised(LimitExceededError)
    assert await backends.run(store) == Raised(LimitExceededError)


async def test_other_threads_of_another_width_never_take_part(server_dsn):
    """Unpinned: each thread fixes its own width; a query reads only entries of its own width."""
    dsn = server_dsn("across_unpinned")
    migrate(dsn, SchemaConfig())
    async with Backends(dsn, SchemaConfig()) as pair:
        async def scenario(backend):
            from prism_memory import create_hash_embedder

            wide = backend.memory(resource_id="a_b", thread_id="wide", embedder=create_hash_embedder(32))
            await wide.remember([{"id": "w1", "text": "wide garden", "consent": USER}], wait=True)
            reader = backend.memory(resource_id="a_b", thread_id="t1", embedder=create_hash_embedder(16))
            await reader.remember([{"id": "n1", "text": "narrow garden", "consent": USER}], wait=True)
            other = backend.memory(resource_id="a_b", thread_id="t2", embedder=create_hash_embedder(16))
            await other.remember([{"id": "n2", "text": "narrow garden too", "consent": USER}], wait=True)
            result = await reader.recall("garden", across_threads=True, message_range=1, explain=True)
            return sorted(hit.id for hit in result.hits), result.explanation.removed

        hits, removed = await pair.run(scenario)
    assert hits == ["n1", "n2"]
    assert removed == {"scope": 1, "hold": 0, "consent": 0, "invalidation": 0, "expiry": 0, "selection": 0}


READERS = {
    "look-alike resource": lambda backend: backend.memory(tenant_id="acme", resource_id="a-b", thread_id="t9"),
    "look-alike tenant": lambda backend: backend.memory(tenant_id="acme-corp", resource_id="a_b", thread_id="t9"),
    "derived agent": lambda backend: backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1").child("helper"),
}
EXPECTED = {
    "look-alike resource": ["t2:acme.a-b.t2-profile", "t2:acme.a-b.t2-user"],
    "look-alike tenant": ["t2:acme-corp.a_b.t2-profile", "t2:acme-corp.a_b.t2-user"],
    "derived agent": ["t1/agent:helper:agent-user"],
}


@pytest.mark.parametrize("reader", sorted(READERS))
async def test_look_alike_scopes_search_only_their_own_resource(backends, reader):
    async def scenario(backend):
        await populate(backend)
        return ids(await READERS[reader](backend).recall("garden plans", top_k=32, across_threads=True))

    assert await backends.run(scenario) == EXPECTED[reader]
