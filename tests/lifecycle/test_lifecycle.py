"""Consent, lineage invalidation, forget, legal hold, retention, export and rebuild, on both backends."""

from datetime import datetime, timedelta, timezone

import pytest
from prism_memory import (
    EntryNotFoundError,
    IdentityMismatchError,
    InvalidCursorError,
    InvalidEntryError,
    LimitExceededError,
    LineageLimitError,
    MemoryConsent,
    MemoryLineage,
    Scope,
    create_hash_embedder,
)

from parity import Clock, Raised

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
EXPLICIT = MemoryConsent(source="user", scope="thread", visible=True)



def ids(result):
    return [hit.id for hit in result.hits]


async def seed(memory, *entries):
    await memory.remember(list(entries), wait=True)


async def test_consent_defaults_and_require_consent(backends):
    async def scenario(backend):
        memory = backend.memory()
        await seed(
            memory,
            {"id": "legacy", "text": "note about tea"},
            {"id": "explicit", "text": "note about tea and cake", "consent": EXPLICIT},
            {"id": "agent", "text": "note about tea leaves", "consent": {"source": "agent", "scope": "profile"}},
        )
        strict = backend.memory(require_consent=True)
        return (
            sorted(ids(await memory.recall("tea", top_k=10))),
            sorted(ids(await memory.recall("tea", top_k=10, require_consent=True))),
            sorted(ids(await strict.recall("tea", top_k=10))),
            sorted(ids(await strict.recall("tea", top_k=10, require_consent=False))),
        )

    everything, strict_call, strict_memory, relaxed = await backends.run(scenario)
    assert everything == ["agent", "explicit", "legacy"]
    assert strict_call == strict_memory == ["agent", "explicit"]
    assert relaxed == everything


async def test_invisible_and_revoked_entries_are_excluded_at_write(backends):
    async def scenario(backend):
        memory = backend.memory()
        await seed(
            memory,
            {"id": "shown", "text": "garden plans", "consent": EXPLICIT},
            {"id": "hidden", "text": "garden plans secret", "consent": MemoryConsent(visible=False)},
            {"id": "revoked", "text": "garden plans old", "consent": MemoryConsent(revoked_at=T0)},
        )
        result = await memory.recall("garden plans", top_k=10, message_range=4)
        return ids(result), [entry.id for entry in result.adjacent]

    hits, adjacent = await backends.run(scenario)
    assert hits == ["shown"] and adjacent == []


async def test_revoke_invalidates_dependents_and_grant_restores_only_the_entry(backends):
    async def scenario(backend):
        seen = []
        memory = backend.memory(clock=Clock(T0), on_invalidate=seen.append)
        await seed(
            memory,
            {"id": "a", "text": "Ada moved to Lisbon", "consent": EXPLICIT},
            {"id": "b", "text": "Ada works as a nurse", "consent": EXPLICIT},
            {"id": "fact", "text": "Ada is a nurse in Lisbon", "lineage": {"source_ids": ["a", "b"], "reason": "summary"}},
            {"id": "meta", "text": "Ada summary of summary", "lineage": MemoryLineage(("fact",))},
        )
        revoked = await memory.set_consent("b", visible=False)
        after_revoke = sorted(ids(await memory.recall("Ada", top_k=10)))
        granted = await memory.set_consent("b", visible=True)
        after_grant = sorted(ids(await memory.recall("Ada", top_k=10)))
        return revoked, after_revoke, granted, after_grant, seen

    revoked, after_revoke, granted, after_grant, seen = await backends.run(scenario)
    assert revoked["consent"] == {"source": "user", "scope": "thread", "visible": False, "granted_at": None, "revoked_at": T0}
    assert after_revoke == ["a"]
    assert seen == [["b", "fact", "meta"]]
    assert granted["consent"]["visible"] is True and granted["consent"]["revoked_at"] is None
    assert granted["consent"]["granted_at"] == T0
    assert after_grant == ["a", "b"]  # derived facts stay invalidated: regenerate them from the evidence


class Stopped(Exception):
    """The test's on_invalidate hook stopping a forget after its tombstones, as a crash would."""


async def test_a_grant_never_brings_back_an_entry_an_erasure_tombstoned(backends):
    """forget tombstones its entries in one transaction, runs on_invalidate, then deletes them. A grant in between
    once cleared the tombstone: the delete failed (PM012) and the entry stayed recallable; and a grant after an
    erasure that stopped there brought the entry back, also one whose tombstone a revoke had written first."""
    async def scenario(backend):
        next_hook = []  # what the next on_invalidate call does

        async def on_invalidate(invalidated):
            if next_hook:
                await next_hook.pop()()

        async def stop():
            raise Stopped()

        memory = backend.memory(on_invalidate=on_invalidate)
        await seed(memory, *({"id": entry_id, "text": f"erase note {entry_id}", "consent": EXPLICIT}
                             for entry_id in ("raced", "stopped", "revoked-first", "kept")))
        next_hook.append(lambda: memory.set_consent("raced", visible=True))  # between the tombstone and the delete
        raced = await memory.forget(["raced"])
        await memory.set_consent("revoked-first", visible=False)
        next_hook.append(stop)
        with pytest.raises(Stopped):
            await memory.forget(["stopped", "revoked-first"])
        for entry_id in ("stopped", "revoked-first"):
            await memory.set_consent(entry_id, visible=True)
        after_grants = sorted(ids(await memory.recall("erase note", top_k=10)))
        finished = await memory.forget(["stopped", "revoked-first"])
        return raced, after_grants, finished, await memory.config.vector_store.count_by_thread(memory.config.scope)

    raced, after_grants, finished, count = await backends.run(scenario)
    assert raced == 1  # the grant did not stop the delete
    assert after_grants == ["kept"]
    assert finished == 2 and count == 1


async def test_set_consent_on_a_legacy_entry_makes_it_explicit_and_unknown_ids_raise(backends):
    async def scenario(backend):
        memory = backend.memory(clock=Clock(T0))
        await seed(memory, {"id": "old", "text": "legacy note"})
        record = await memory.set_consent("old", source="agent", scope="profile")
        strict = await memory.recall("legacy note", require_consent=True)
        return record.consent, ids(strict)

    consent, strict = await backends.run(scenario)
    assert consent == {"source": "agent", "scope": "profile", "visible": True, "granted_at": None, "revoked_at": None}
    assert strict == ["old"]

    async def unknown(backend):
        await backend.memory().set_consent("missing", visible=False)

    async def bad_value(backend):
        await seed(backend.memory(), {"id": "x", "text": "x"})
        await backend.memory().set_consent("x", source="robot")

    async def naive_time(backend):
        await seed(backend.memory(), {"id": "x", "text": "x"})
        await backend.memory().set_consent("x", revoked_at=datetime(2026, 1, 1))

    assert await backends.run(unknown) == Raised(EntryNotFoundError)
    assert await backends.run(bad_value) == Raised(InvalidEntryError)
    assert await backends.run(naive_time) == Raised(InvalidEntryError)


async def test_correct_reembeds_keeps_consent_and_invalidates_dependents_only(backends):
    async def scenario(backend):
        seen = []
        memory = backend.memory(clock=Clock(T0), on_invalidate=seen.append)
        await seed(
            memory,
            {"id": "src", "text": "Ada lives in Porto", "consent": MemoryConsent(source="user", scope="profile")},
            {"id": "dep", "text": "Ada enjoys Porto wine bars", "lineage": {"source_ids": ["src"]}},
        )
        corrected = await memory.correct("src", "Ada lives in Lisbon")
        return corrected, ids(await memory.recall("Ada Lisbon Porto", top_k=5)), seen

    corrected, hits, seen = await backends.run(scenario)
    assert corrected["text"] == "Ada lives in Lisbon"
    assert corrected["consent"]["scope"] == "profile"
    assert corrected["metadata"] == {"_lineage": {"sourceIds": [], "reason": "corrected"}}
    assert hits == ["src"] and seen == [["dep"]]


async def test_a_fact_derived_from_an_invalidated_source_is_excluded_when_written(backends):
    async def scenario(backend):
        memory = backend.memory()
        await seed(memory, {"id": "s1", "text": "trip to Osaka", "consent": EXPLICIT}, {"id": "s2", "text": "trip to Kyoto"})
        await memory.forget(["s2"])
        await seed(memory, {"id": "d", "text": "trip to Osaka and Kyoto", "lineage": {"source_ids": ["s1", "s2"]}})
        await seed(memory, {"id": "ok", "text": "trip to Osaka again", "lineage": {"source_ids": ["s1", "elsewhere"]}})
        return sorted(ids(await memory.recall("trip Osaka Kyoto", top_k=10)))

    assert await backends.run(scenario) == ["ok", "s1"]


async def test_lineage_walk_caps_refuse_a_revoke_and_change_nothing_but_never_stop_an_erasure(backends):
    async def deep(backend):
        memory = backend.memory(thread_id="deep")
        chain = [{"id": "n0", "text": "root node"}]
        chain += [{"id": f"n{i}", "text": f"node {i}", "lineage": {"source_ids": [f"n{i - 1}"]}} for i in range(1, 10)]
        await seed(memory, *chain)
        return await memory.forget(["n0"]), len(ids(await memory.recall("node", top_k=32)))

    async def wide(backend):
        memory = backend.memory(thread_id="wide")
        await seed(memory, {"id": "hub", "text": "hub"})
        for start in range(0, 257, 128):
            await seed(memory, *[{"id": f"d{i}", "text": f"leaf {i}", "lineage": {"source_ids": ["hub"]}}
                                 for i in range(start, min(start + 128, 257))])
        try:
            await memory.set_consent("hub", visible=False)
        except LineageLimitError:
            raised = True
        return raised, len(ids(await memory.recall("hub", top_k=32)))

    async def depth_eight_is_fine(backend):
        memory = backend.memory(thread_id="eight")
        chain = [{"id": "n0", "text": "root node"}]
        chain += [{"id": f"n{i}", "text": f"node {i}", "lineage": {"source_ids": [f"n{i - 1}"]}} for i in range(1, 9)]
        await seed(memory, *chain)
        return await memory.forget(["n0"]), ids(await memory.recall("node", top_k=32))

    assert await backends.run(deep) == [1, 0]  # past depth 8: the erasure walks on in bounded steps
    assert await backends.run(wide) == [True, 32]
    assert await backends.run(depth_eight_is_fine) == [1, []]

    async def too_many_sources(backend):
        await seed(backend.memory(), {"id": "x", "text": "x", "lineage": {"source_ids": [f"s{i}" for i in range(33)]}})

    assert await backends.run(too_many_sources) == Raised(InvalidEntryError)


async def test_forget_deletes_after_the_hook_and_hold_keeps_the_body(backends):
    async def scenario(backend):
        log = []
        memory = None

        async def on_invalidate(invalidated):
            count = await memory.config.vector_store.count_by_thread(memory.config.scope)
            log.append((invalidated, count))  # the bodies are still there when the hook runs

        memory = backend.memory(on_invalidate=on_invalidate)
        await seed(
            memory,
            {"id": "gone", "text": "delete me please", "consent": EXPLICIT},
            {"id": "kept", "text": "legal hold me", "consent": EXPLICIT},
            {"id": "revoked", "text": "revoked then deleted", "consent": EXPLICIT},
            {"id": "child", "text": "derived from gone", "lineage": {"source_ids": ["gone"]}},
        )
        deleted = await memory.forget(["gone", "gone", "unknown"])
        held = await memory.forget(["kept"], hold=True)
        not_deleted = await memory.forget(["kept"])
        await memory.set_consent("revoked", visible=False)
        purged = await memory.forget(["revoked"])
        count = await memory.config.vector_store.count_by_thread(memory.config.scope)
        visible = ids(await memory.recall("delete hold revoked derived", top_k=10))
        exported = await memory.export_memory(memory.config.scope)
        return deleted, held, not_deleted, purged, count, visible, [record.id for record in exported.entries], log

    deleted, held, not_deleted, purged, count, visible, exported, log = await backends.run(scenario)
    assert (deleted, held, not_deleted, purged) == (1, 0, 0, 1)
    assert count == 2  # "kept" under hold, "child" invalidated but stored
    assert visible == [] and exported == []
    assert log[0] == [["child", "gone"], 4]


async def test_an_erasure_deletes_the_derived_copies_too_and_holds_still_win(backends):
    """after forget(["ssn-123"]) a derived entry quoting the SSN kept its body (tombstoned, never injected)."""
    async def scenario(backend):
        memory = backend.memory()
        await seed(
            memory,
            {"id": "ssn-123", "text": "Ada's SSN is 123-45-6789"},
            {"id": "nurse", "text": "Ada (SSN 123-45-6789) is a nurse", "lineage": {"source_ids": ["ssn-123"]}},
            {"id": "summary", "text": "Ada, nurse, SSN 123-45-6789", "lineage": {"source_ids": ["nurse"]}},
            {"id": "held", "text": "SSN 123-45-6789 under hold", "lineage": {"source_ids": ["ssn-123"]}},
            {"id": "other", "text": "Ada likes tea"},
        )
        await memory.forget(["held"], hold=True)
        deleted = await memory.forget(["ssn-123"], erase_derived=True)
        stored = await memory.config.vector_store.list_by_thread(memory.config.scope, None, 100, exportable=False)
        again = await memory.forget(["ssn-123"], erase_derived=True)  # nothing left to delete
        return deleted, sorted(record.id for record in stored), again

    assert await backends.run(scenario) == [3, ["held", "other"], 0]

    async def bad_flag(backend):
        await backend.memory().forget(["a"], erase_derived="yes")

    assert await backends.run(bad_flag) == Raised(LimitExceededError)


async def test_forget_bounds(backends):
    async def too_many(backend):
        await backend.memory().forget([f"id{i}" for i in range(65)])

    async def empty(backend):
        await backend.memory().forget([])

    assert await backends.run(too_many) == Raised(LimitExceededError)
    assert await backends.run(empty) == Raised(LimitExceededError)


async def test_retention_sweeps_in_bounded_batches_and_skips_holds(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memory = backend.memory(clock=clock)
        await seed(memory, *[{"id": f"e{i:02d}", "text": f"event {i}", "sequence": i} for i in range(1, 11)])
        await memory.forget(["e02"], hold=True)
        clock.now = T0 + timedelta(days=3)
        await seed(memory, {"id": "fresh", "text": "fresh event", "sequence": 11})
        by_count = await memory.apply_retention(max_entries=8, batch_size=1)
        by_age = [await memory.apply_retention(max_age_days=2, batch_size=4) for _ in range(3)]
        remaining = [record.id for record in await memory.config.vector_store.list_by_thread(memory.config.scope, None, 200)]
        return by_count, by_age, remaining

    by_count, by_age, remaining = await backends.run(scenario)
    assert by_count == {"deleted": 1, "scanned": 2}  # e01 deleted, e02 (held) scanned
    # every sweep scans the held entry again and never deletes it
    assert by_age == [{"deleted": 4, "scanned": 5}, {"deleted": 4, "scanned": 5}, {"deleted": 0, "scanned": 1}]
    assert remaining == ["e02", "fresh"]


async def test_retention_without_a_rule_sweeps_what_expired_and_caps_its_batch(backends):
    async def no_rule(backend):
        memory = backend.memory()
        await memory.remember([{"id": "kept", "text": "no expiry"}], wait=True)
        return await memory.apply_retention()  # only what has expired: nothing here

    async def big_batch(backend):
        await backend.memory().apply_retention(max_entries=1, batch_size=65)

    assert await backends.run(no_rule) == {"deleted": 0, "scanned": 0}
    assert await backends.run(big_batch) == Raised(LimitExceededError)


async def test_export_pages_only_consented_visible_records_with_a_stable_cursor(backends):
    async def scenario(backend):
        memory = backend.memory(clock=Clock(T0))
        entries = [{"id": f"x{i}", "text": f"exported note {i}", "consent": EXPLICIT, "sequence": i} for i in range(1, 8)]
        entries += [
            {"id": "legacy", "text": "no consent", "sequence": 20},
            {"id": "hidden", "text": "invisible", "consent": MemoryConsent(visible=False), "sequence": 21},
        ]
        await seed(memory, *entries)
        await memory.set_consent("x3", visible=False)
        await memory.forget(["x4"], hold=True)
        pages, cursor = [], None
        while True:
            page = await memory.export_memory(
                {"tenant_id": "t1", "resource_id": "user-ada", "thread_id": "thread-1"}, cursor=cursor, limit=2
            )
            pages.append([record.id for record in page.entries])
            cursor = page.next_cursor
            if cursor is None:
                break
        small = await memory.export_memory(memory.config.scope, max_bytes=1)
        return pages, [record.id for record in small.entries], small.bytes > 1, small.next_cursor is not None

    pages, small, over, more = await backends.run(scenario)
    assert pages == [["x1", "x2"], ["x5", "x6"], ["x7"]]
    assert small == ["x1"] and over and more  # the first record always fits


@pytest.mark.parametrize(
    ("identity", "options", "error"),
    [
        ({"tenant_id": "t1", "resource_id": "user-ada", "thread_id": "other"}, {}, IdentityMismatchError),
        (Scope("t2", "user-ada", "thread-1"), {}, IdentityMismatchError),
        ({"tenant_id": "t1", "resource_id": "user-ada"}, {}, IdentityMismatchError),
        (Scope("t1", "user-ada", "thread-1"), {"limit": 201}, LimitExceededError),
        (Scope("t1", "user-ada", "thread-1"), {"max_bytes": 32 * 1024 * 1024 + 1}, LimitExceededError),
        (Scope("t1", "user-ada", "thread-1"), {"max_ms": 60_001}, LimitExceededError),
        (Scope("t1", "user-ada", "thread-1"), {"cursor": "not-a-cursor"}, InvalidCursorError),
    ],
)
async def test_export_refuses_other_identities_and_out_of_range_options(backends, identity, options, error):
    async def scenario(backend):
        await backend.memory().export_memory(identity, **options)

    assert await backends.run(scenario) == Raised(error)


async def test_rebuild_reembeds_page_by_page_with_the_current_embedder(backends):
    async def scenario(backend):
        old = backend.memory()
        await seed(old, *[{"id": f"r{i}", "text": f"rebuild me {i} kiwi", "sequence": i} for i in range(1, 6)])
        new = backend.memory(embedder=ReversedEmbedder(backend.embedder))
        before = await new.recall("kiwi 3 me rebuild", top_k=1)
        pages, cursor = [], None
        while True:
            result = await new.rebuild_index(cursor=cursor, batch_size=2)
            pages.append(result.rebuilt)
            cursor = result.next_cursor
            if cursor is None:
                break
        after = await new.recall("kiwi 3 me rebuild", top_k=1)
        return pages, before.hits[0].similarity < 0.99, after.hits[0].id, after.hits[0].similarity

    pages, stale_before, best, similarity = await backends.run(scenario)
    assert pages == [2, 2, 1]
    assert stale_before and best == "r3" and similarity == pytest.approx(1.0)


class ReversedEmbedder:
    """A different embedding model of the same width: the hash embedding of the words in reverse order."""

    def __init__(self, base):
        self.base = base
        self.dimensions = base.dimensions

    async def embed(self, texts):
        vectors = await self.base.embed(texts)
        return [[value * (1 + (index % 3)) for index, value in enumerate(vector)] for vector in vectors]


async def test_list_and_count_are_bounded(backends):
    async def scenario(backend):
        memory = backend.memory()
        await seed(memory, *[{"id": f"l{i}", "text": f"listed {i}", "sequence": i % 3} for i in range(7)])
        store = memory.config.vector_store
        first = await store.list_by_thread(memory.config.scope, None, 3)
        rest = await store.list_by_thread(memory.config.scope, (first[-1].sequence, first[-1].id), 200)
        return [(r.sequence, r.id) for r in first + rest], await store.count_by_thread(memory.config.scope)

    order, count = await backends.run(scenario)
    assert count == 7
    assert order == [[0, "l0"], [0, "l3"], [0, "l6"], [1, "l1"], [1, "l4"], [2, "l2"], [2, "l5"]]

    async def over_cap(backend):
        memory = backend.memory()
        await memory.config.vector_store.list_by_thread(memory.config.scope, None, 201)

    assert await backends.run(over_cap) == Raised(LimitExceededError)


def test_hash_embedder_used_by_rebuild_test_differs():
    assert ReversedEmbedder(create_hash_embedder(8)).dimensions == 8
