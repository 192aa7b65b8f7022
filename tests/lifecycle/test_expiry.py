"""Expiry enforced at read time, on both backends: an entry's ``expires_at`` or ``ttl``, and stored retention
policies of a resource or a thread, take an entry out of recall, export and the context gate the moment they
pass; the sweep then deletes it (compare langgraph PR#8354, where expired but unswept items were returned).

Look-alike scopes (``a_b``/``a-b``, ``acme``/``acme-corp``) and distinct ids per scope.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from prism_memory import LimitExceededError, MemoryConsent, MemoryLineage, Scope

from parity import Clock, Raised
from roles import as_role, grant, needs_bindings

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
USER = MemoryConsent(scope="user")


def seen(result) -> list[str]:
    return sorted(hit.id for hit in result.hits)


async def test_an_entry_expires_the_moment_its_time_passes(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1", clock=clock)
        await memory.remember([
            {"id": "a_b-ttl", "text": "pizza on friday", "consent": USER, "ttl": timedelta(hours=1)},
            {"id": "a_b-at", "text": "pizza on saturday", "consent": USER, "expires_at": T0 + timedelta(hours=2)},
            {"id": "a_b-kept", "text": "pizza forever", "consent": USER},
        ], wait=True)
        provider = memory.create_context_provider(working=False)
        states = {}
        for label, delta in (("before", timedelta(0)), ("at the ttl", timedelta(hours=1)),
                             ("just before expires_at", timedelta(hours=2) - timedelta(microseconds=1)),
                             ("at expires_at", timedelta(hours=2))):
            clock.now = T0 + delta
            explained = await memory.recall("pizza", top_k=8, explain=True)
            states[label] = {
                "recall": seen(explained),
                "removed": explained.explanation.removed["expiry"],
                "export": [record.id for record in (await memory.export_memory(memory.config.scope)).entries],
                "resource export": [record.id for record in (await memory.export_resource(
                    Scope("acme", "a_b"))).entries],
                "context": sorted(id_ for block in await provider.provide("pizza") for id_ in block.entry_ids),
                "stored": await memory.count_resource(),
            }
        return states

    states = await backends.run(scenario)
    assert states["before"]["recall"] == ["a_b-at", "a_b-kept", "a_b-ttl"]
    assert states["at the ttl"]["recall"] == ["a_b-at", "a_b-kept"] and states["at the ttl"]["removed"] == 1
    assert states["just before expires_at"]["recall"] == ["a_b-at", "a_b-kept"]
    final = states["at expires_at"]
    assert final == {"recall": ["a_b-kept"], "removed": 2, "export": ["a_b-kept"], "resource export": ["a_b-kept"],
                     "context": ["a_b-kept"], "stored": 3}  # gone from every read, still stored until the sweep


async def test_a_stored_policy_hides_an_old_entry_at_once_and_the_sweep_deletes_it(backends):
    async def scenario(backend):
        clock = Clock(T0)
        hooked = []
        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1", clock=clock,
                                on_invalidate=hooked.append)
        await memory.remember([{"id": "a_b-old", "text": "forty days old note", "consent": USER},
                               {"id": "a_b-summary", "text": "summary of the old note", "consent": USER,
                                "lineage": MemoryLineage(("a_b-old",))}], wait=True)
        clock.now = T0 + timedelta(days=35)
        await memory.remember([{"id": "a_b-new", "text": "five days old note", "consent": USER}], wait=True)
        clock.now = T0 + timedelta(days=40)
        before = seen(await memory.recall("note", top_k=8))
        await memory.set_retention_policy(30)  # no sweep: the 40-day-old entries leave every read at once
        after = seen(await memory.recall("note", top_k=8))
        policy = await memory.retention_policy()
        swept = await memory.apply_retention()
        again = await memory.apply_retention()
        await memory.set_retention_policy(None)
        return before, after, policy, swept, again, hooked, await memory.count_resource(), await memory.retention_policy()

    before, after, policy, swept, again, hooked, stored, removed = await backends.run(scenario)
    assert before == ["a_b-new", "a_b-old", "a_b-summary"] and after == ["a_b-new"]
    assert policy == {"resource_max_age_days": None, "thread_max_age_days": 30.0}
    assert swept == {"deleted": 2, "scanned": 2} and again == {"deleted": 0, "scanned": 0}
    assert hooked == [["a_b-old", "a_b-summary"]] and stored == 1
    assert removed == {"resource_max_age_days": None, "thread_max_age_days": None}


async def test_a_resource_policy_covers_every_thread_and_the_stricter_policy_wins(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memories = {}
        for tenant, resource, thread in [("acme", "a_b", "t1"), ("acme", "a_b", "t2"), ("acme", "a-b", "t2"),
                                         ("acme-corp", "a_b", "t2")]:
            memory = backend.memory(tenant_id=tenant, resource_id=resource, thread_id=thread, clock=clock)
            prefix = f"{tenant}.{resource}.{thread}"
            await memory.remember([{"id": f"{prefix}-20d", "text": "old trip note", "consent": USER}], wait=True)
            memories[(tenant, resource, thread)] = memory
        clock.now = T0 + timedelta(days=10)
        for memory in memories.values():
            scope = memory.config.scope
            await memory.remember([{"id": f"{scope.tenant_id}.{scope.resource_id}.{scope.thread_id}-10d",
                                    "text": "newer trip note", "consent": USER}], wait=True)
        clock.now = T0 + timedelta(days=20)
        reader, other = memories[("acme", "a_b", "t1")], memories[("acme", "a_b", "t2")]
        await reader.set_retention_policy(15, resource_wide=True)
        await other.set_retention_policy(5)  # t2 stricter still: nothing of it survives
        across = seen(await reader.recall("trip note", top_k=32, across_threads=True, explain=True))
        explained = (await reader.recall("trip note", top_k=32, across_threads=True, explain=True)).explanation.removed
        look_alikes = [seen(await memories[scope].recall("trip note", top_k=32, across_threads=True))
                       for scope in (("acme", "a-b", "t2"), ("acme-corp", "a_b", "t2"))]
        policies = await other.retention_policy(), await reader.retention_policy()
        sweep, cursor, batches = 0, None, 0
        while True:
            result = await reader.apply_resource_retention(cursor=cursor, batch_size=1)
            sweep, batches = sweep + result.deleted, batches + 1
            if result.next_cursor is None:
                break
            cursor = result.next_cursor
        return across, explained, look_alikes, policies, sweep, batches, await reader.count_resource()

    across, explained, look_alikes, policies, sweep, batches, left = await backends.run(scenario)
    assert across == ["acme.a_b.t1-10d"]
    assert explained["expiry"] == 3
    assert look_alikes == [["acme.a-b.t2-10d", "acme.a-b.t2-20d"], ["acme-corp.a_b.t2-10d", "acme-corp.a_b.t2-20d"]]
    assert policies == [{"resource_max_age_days": 15.0, "thread_max_age_days": 5.0},
                        {"resource_max_age_days": 15.0, "thread_max_age_days": None}]
    assert sweep == 3 and batches == 4 and left == 1


async def test_expiry_applies_to_shared_and_adjacent_entries_and_to_a_rewrite(backends):
    async def scenario(backend):
        clock = Clock(T0)
        parent = backend.memory(resource_id="a_b", thread_id="parent", clock=clock)
        child = backend.memory(resource_id="a_b", thread_id="child", clock=clock)
        await parent.remember([
            {"id": "p1", "text": "shared plan", "sequence": 1, "ttl": timedelta(minutes=5)},
            {"id": "p2", "text": "shared neighbour", "sequence": 2},
            {"id": "p3", "text": "expiring neighbour", "sequence": 3, "ttl": timedelta(minutes=5)},
        ], wait=True)
        await parent.share_with("child", ["p1", "p2"])
        before = await child.recall("shared plan", top_k=8, share_from_parent_thread_id="parent")
        adjacent_before = [entry.id for entry in (await parent.recall("shared neighbour", top_k=1, message_range=2)).adjacent]
        clock.now = T0 + timedelta(minutes=5)
        after = await child.recall("shared plan", top_k=8, share_from_parent_thread_id="parent", explain=True)
        adjacent_after = [entry.id for entry in (await parent.recall("shared neighbour", top_k=1, message_range=2)).adjacent]
        # A rewrite without an expiry keeps the stored one; a new ttl replaces it.
        await parent.remember([{"id": "p3", "text": "expiring neighbour, rewritten"}], wait=True)
        kept = seen(await parent.recall("neighbour", top_k=8))
        await parent.remember([{"id": "p3", "text": "expiring neighbour, renewed", "ttl": timedelta(days=1)}], wait=True)
        renewed = seen(await parent.recall("neighbour", top_k=8))
        return (seen(before), adjacent_before, seen(after), after.explanation.removed["expiry"], adjacent_after,
                kept, renewed)

    assert await backends.run(scenario) == [["p1", "p2"], ["p1", "p3"], ["p2"], 1, [], ["p2"], ["p2", "p3"]]


async def test_bad_expiry_and_policies_are_refused(backends):
    cases = {
        "both": ({"id": "x", "text": "t", "ttl": timedelta(days=1), "expires_at": T0 + timedelta(days=1)}, Exception),
        "naive": ({"id": "x", "text": "t", "expires_at": datetime(2030, 1, 1)}, Exception),
        "past": ({"id": "x", "text": "t", "expires_at": T0}, LimitExceededError),
        "zero ttl": ({"id": "x", "text": "t", "ttl": timedelta(0)}, LimitExceededError),
        "ttl a number": ({"id": "x", "text": "t", "ttl": 60}, Exception),
    }
    for name, (entry, error) in cases.items():
        async def scenario(backend, entry=entry):
            await backend.memory(clock=Clock(T0)).remember([entry], wait=True)

        outcome = await backends.run(scenario)
        assert isinstance(outcome, Raised) and issubclass(outcome.error, error), (name, outcome)

    for days in (-1, 36501, float("nan"), "30", True):
        async def policy(backend, days=days):
            await backend.memory().set_retention_policy(days)

        assert await backends.run(policy) == Raised(LimitExceededError), days

    async def thread_policy_without_a_thread(backend):
        await backend.memory(thread_id=None).set_retention_policy(3)

    async def resource_policy_without_a_thread(backend):
        memory = backend.memory(thread_id=None)
        await memory.set_retention_policy(3, resource_wide=True)
        return await memory.retention_policy()

    assert (await backends.run(thread_policy_without_a_thread)).error.__name__ == "InvalidScopeError"
    assert await backends.run(resource_policy_without_a_thread) == {"resource_max_age_days": 3.0,
                                                                     "thread_max_age_days": None}


async def test_both_sweeps_delete_what_expired_and_what_expired_with_it(backends):
    """apply_retention and apply_resource_retention agree: the expired entry's body goes, and so does a summary
    derived from it, which expired with it (an unrelated entry stays)."""
    async def scenario(backend, resource_wide):
        clock = Clock(T0)
        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="sweep", clock=clock)
        await memory.remember([
            {"id": "a_b-otp", "text": "login code 4711", "consent": USER, "ttl": timedelta(minutes=10)},
            {"id": "a_b-summary", "text": "the user got a login code", "consent": USER,
             "lineage": MemoryLineage(("a_b-otp",))},
            {"id": "a_b-other", "text": "an unrelated login note", "consent": USER},
        ], wait=True)
        clock.now = T0 + timedelta(hours=1)
        swept = await (memory.apply_resource_retention() if resource_wide else memory.apply_retention())
        stored = [record.id for record in await memory.config.vector_store.list_by_resource(Scope("acme", "a_b"), None, 10)]
        return {"deleted": swept.deleted, "stored": sorted(stored), "recall": seen(await memory.recall("login"))}

    thread = await backends.run(lambda backend: scenario(backend, False))
    resource = await backends.run(lambda backend: scenario(backend, True))
    assert thread == resource == {"deleted": 2, "stored": ["a_b-other"], "recall": ["a_b-other"]}


async def test_a_ttl_of_days_is_24_hours_each_across_a_daylight_saving_change(backends):
    """A ttl of a day lasts 24 hours, whatever the server session's time zone does meanwhile (the test server
    runs in America/St_Johns, whose clocks go forward on 2026-03-08 at 05:30 UTC)."""
    eve = datetime(2026, 3, 7, 12, 0, tzinfo=timezone.utc)

    async def scenario(backend):
        clock = Clock(eve)
        memory = backend.memory(tenant_id="acme", resource_id="a-b", thread_id="dst", clock=clock)
        await memory.remember([
            {"id": "a-b-day", "text": "pizza tomorrow", "consent": USER, "ttl": timedelta(days=1)},
            {"id": "a-b-week", "text": "pizza next week", "consent": USER, "ttl": timedelta(days=7, hours=2)},
        ], wait=True)
        states = {}
        for label, delta in (("23h30", timedelta(hours=23, minutes=30)), ("24h", timedelta(hours=24)),
                             ("170h", timedelta(hours=170) - timedelta(microseconds=1)), ("170h+", timedelta(hours=170))):
            clock.now = eve + delta
            states[label] = seen(await memory.recall("pizza", top_k=8))
        return states

    assert await backends.run(scenario) == {"23h30": ["a-b-day", "a-b-week"], "24h": ["a-b-week"],
                                            "170h": ["a-b-week"], "170h+": []}


async def test_a_bad_expiry_is_refused_by_remember_itself_not_later_by_flush(backends):
    """The expiry ranges are checked at the call (against the memory's clock), so a background write never
    takes a batch down for them."""
    for entry in ({"id": "x", "text": "t", "ttl": timedelta(seconds=-1)}, {"id": "x", "text": "t", "ttl": timedelta.max},
                  {"id": "x", "text": "t", "ttl": timedelta(days=36500, microseconds=1)},
                  {"id": "x", "text": "t", "expires_at": T0}):
        async def scenario(backend, entry=entry):
            memory = backend.memory(clock=Clock(T0))
            with pytest.raises(LimitExceededError):
                await memory.remember([{"id": "fine", "text": "kept"}, entry])  # wait=False
            await memory.flush()  # nothing was queued, so nothing fails here
            return await memory.count_resource()

        assert await backends.run(scenario) == 0, entry


def test_the_reads_refuse_a_null_or_infinite_now_from_psql(pg_dsn):
    """A NULL or infinite p_now would measure expiry against nothing: the reads refuse it (PM002)."""
    vector = "array_fill(1, array[64])::vector"
    calls = [f"select * from prism_memory.recall_v4('acme', 'a_b', 't1', {vector}, 'pizza', p_now => %s)",
             "select * from prism_memory.list_entries_v3('acme', 'a_b', 't1', p_now => %s)",
             "select * from prism_memory.list_resource_entries_v2('acme', 'a_b', p_now => %s)",
             "select * from prism_memory.retention_candidates_v2('acme', 'a_b', 't1', null, null, 64, p_now => %s)",
             "select * from prism_memory.invalidate_resource_v1('acme', 'a_b', p_expired_only => true, p_now => %s)"]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for call in calls:
            for now in (None, "-infinity", "infinity"):
                with pytest.raises(psycopg.Error) as raised:
                    conn.execute(call, (now,))
                assert raised.value.sqlstate == "PM002", (call, now)
            conn.execute(call, (T0,))


@needs_bindings
def test_a_bound_roles_ttl_and_reads_use_the_servers_clock(pg_dsn, role):
    grant(pg_dsn, role, ["acme"])
    far_future = datetime(9000, 1, 1, tzinfo=timezone.utc)
    vector = "array_fill(1, array[64])::vector"
    with psycopg.connect(as_role(pg_dsn, role), autocommit=True) as conn:
        conn.execute(f"select prism_memory.remember_v3('acme', 'a_b', 't1', array['bound'], array['bound note'], "
                     f"array[{vector}], p_ttl => array['1 hour']::interval[], p_now => %s)", (far_future,))
        # A far-future p_now cannot expire it either: the bound role's reads run on the server's clock too.
        recalled = [row[0] for row in conn.execute(
            f"select id from prism_memory.recall_v4('acme', 'a_b', 't1', {vector}, 'bound', p_now => %s) "
            "where kind = 'hit'", (far_future,))]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        [(expires_at,)] = conn.execute("select expires_at from prism_memory.semantic_memory where id = 'bound'").fetchall()
    assert abs(expires_at - (datetime.now(timezone.utc) + timedelta(hours=1))) < timedelta(minutes=5)
    assert recalled == ["bound"]


async def test_a_ttl_that_would_end_after_year_9999_is_refused_at_the_call(backends):
    """A ttl ending after the latest time stored (9999-12-30 UTC, inside Python's ``datetime`` in any time zone)
    is refused with the same typed error on both backends; one ending exactly then is stored."""
    late = datetime(9999, 12, 1, tzinfo=timezone.utc)
    last_instant = datetime(9999, 12, 30, tzinfo=timezone.utc)

    async def scenario(backend):
        memory = backend.memory(tenant_id="acme-corp", resource_id="user-1", clock=Clock(late))
        try:
            await memory.remember([{"id": "late-ttl", "text": "t", "ttl": timedelta(days=31)}], wait=True)
        except LimitExceededError as exc:
            refused = "9999-12-30" in str(exc)
        await memory.remember([{"id": "last-ttl", "text": "t", "consent": USER, "ttl": last_instant - late}], wait=True)
        return refused, [record.id for record in (await memory.export_memory(memory.config.scope)).entries]

    assert await backends.run(scenario) == [True, ["last-ttl"]]


def test_remember_v2_refuses_an_expiry_after_year_9999_from_psql(pg_dsn):
    """A direct SQL caller gets the range error too: PM005 for a ttl ending after 9999-12-30 UTC (PM002 for such an
    ``expires_at``, as for any time out of the stored range)."""
    vector = "array[array_fill(1, array[64])::vector]"
    call = (f"select prism_memory.remember_v3('acme', 'user_1', 't1', array['late'], array['late note'], {vector}, "
            "p_expires_at => %s::timestamptz[], p_ttl => %s::interval[], p_now => %s)")
    late = datetime(9999, 12, 1, tzinfo=timezone.utc)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for expires_at, ttl, sqlstate in ((None, ["29 days 00:00:00.000001"], "PM005"),
                                          (["9999-12-31 00:00:00+00"], None, "PM002")):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(call, (expires_at, ttl, late))
            assert raised.value.sqlstate == sqlstate and "9999" in raised.value.diag.message_primary
        conn.execute(call, (None, ["29 days"], late))
        [(count,)] = conn.execute("select count(*) from prism_memory.semantic_memory where id = 'late'").fetchall()
    assert count == 1


def test_remember_v2_judges_a_ttl_by_when_it_ends_and_refuses_a_bad_now_from_psql(pg_dsn):
    """An interval of months compares as 30 days each but adds calendar months, so a direct SQL caller's ttl is
    judged by the time it ends (PM005 outside (now, now + 36,500 days]); a NULL, infinite or out-of-range
    ``p_now`` is refused (PM002) by every write that stores it, as by the reads."""
    vector = "array[array_fill(1, array[64])::vector]"
    remember = (f"select prism_memory.remember_v3('acme', 'user_1', 't1', array['m'], array['month note'], {vector}, "
                "p_ttl => %s::interval[], p_now => %s)")
    february = datetime(2026, 2, 1, tzinfo=timezone.utc)
    writes = [remember.replace("%s::interval[]", "null"),
              "select prism_memory.correct_v3('acme', 'user_1', 't1', 'm', 'x', array_fill(1, array[64])::vector, p_now => %s)",
              "select prism_memory.set_consent_v2('acme', 'user_1', 't1', 'm', p_visible => true, p_now => %s)",
              "select prism_memory.set_retention_policy_v1('acme', 'user_1', 't1', 3, p_now => %s)"]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for ttl in (["1216 months"], ["1 month -29 days"], ["-1 days 24:00:00"]):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(remember, (ttl, february))
            assert raised.value.sqlstate == "PM005", ttl
        conn.execute(remember, (["1 month"], february))
        for call in writes:
            for now in (None, "infinity", "-infinity", "10000-06-01 00:00:00+00"):
                with pytest.raises(psycopg.Error) as raised:
                    conn.execute(call, (now,))
                assert raised.value.sqlstate == "PM002", (call, now)
        [(expires_at,)] = conn.execute("select expires_at from prism_memory.semantic_memory where id = 'm'").fetchall()
    assert expires_at == datetime(2026, 3, 1, tzinfo=timezone.utc)
