"""Everything a resource (a user) holds, across its threads: count, export and erase, on both backends.

Look-alike scopes (tenants ``acme``/``acme-corp``, resources ``a_b``/``a-b`` and the derived
``a_b/agent:helper``) hold the same kind of data under ids of their own, and must come through untouched.
"""

from __future__ import annotations

import psycopg
import pytest
from prism_memory import (
    IdentityMismatchError,
    InvalidCursorError,
    InvalidScopeError,
    LifecycleOrderError,
    LimitExceededError,
    MemoryConsent,
    MemoryLineage,
    Scope,
)
from prism_memory.export import encode_cursor

from parity import Raised

SCOPES = [("acme", "a_b", "t1"), ("acme", "a_b", "t2"), ("acme", "a_b", "t10"),
          ("acme", "a-b", "t1"), ("acme-corp", "a_b", "t1")]


def entries(prefix: str) -> list[dict]:
    return [
        {"id": f"{prefix}-1", "text": "likes tea", "consent": MemoryConsent()},
        {"id": f"{prefix}-2", "text": "has a cat", "consent": MemoryConsent(scope="user")},
        {"id": f"{prefix}-legacy", "text": "written without consent"},
        {"id": f"{prefix}-held", "text": "kept for the court", "consent": MemoryConsent()},
        {"id": f"{prefix}-derived", "text": "likes tea and has a cat", "consent": MemoryConsent(),
         "lineage": MemoryLineage((f"{prefix}-1", f"{prefix}-2"))},
    ]


async def populate(backend, on_invalidate=None):
    """Every scope's entries (one held); returns the memories by scope and the derived agent's."""
    memories = {}
    for tenant, resource, thread in SCOPES:
        memory = backend.memory(tenant_id=tenant, resource_id=resource, thread_id=thread, on_invalidate=on_invalidate)
        prefix = f"{tenant}.{resource}.{thread}"
        await memory.remember(entries(prefix), wait=True)
        await memory.forget([f"{prefix}-held"], hold=True)
        memories[(tenant, resource, thread)] = memory
    agent = memories[("acme", "a_b", "t1")].child("helper")
    await agent.remember([{"id": "agent-1", "text": "the helper's note", "consent": MemoryConsent()}], wait=True)
    return memories, agent


USER = {"tenant_id": "acme", "resource_id": "a_b"}


async def test_count_and_export_cover_every_thread_of_the_resource_and_nothing_else(backends):
    async def scenario(backend):
        memories, _ = await populate(backend)
        reader = memories[("acme", "a_b", "t1")]
        pages, cursor = [], None
        while True:
            page = await reader.export_resource(USER, cursor=cursor, limit=4)
            pages.append([(record.thread_id, record.id) for record in page.entries])
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        whole = await reader.export_resource(Scope("acme", "a_b"))
        return await reader.count_resource(), pages, whole.bytes

    count, pages, size = await backends.run(scenario)
    assert count == 15  # 3 threads x 5 entries, the held and the legacy one included (what is stored)
    # (thread, sequence, id) order, code-point order for the texts: t1 < t10 < t2. Exported: explicit
    # consent, visible, not held, not tombstoned; the consent scope does not matter to an export.
    expected = [(thread, f"acme.a_b.{thread}-{n}") for thread in ("t1", "t10", "t2") for n in ("1", "2", "derived")]
    assert [item for page in pages for item in page] == [list(item) for item in expected]
    assert [len(page) for page in pages] == [4, 4, 1]
    assert size > 0


async def test_a_resource_export_names_exactly_the_tenant_and_resource(backends):
    cases = {
        "with a thread": {"tenant_id": "acme", "resource_id": "a_b", "thread_id": "t1"},
        "another resource": {"tenant_id": "acme", "resource_id": "a-b"},
        "another tenant": {"tenant_id": "acme-corp", "resource_id": "a_b"},
        "the thread's scope": Scope("acme", "a_b", "t1"),
        "unknown field": {"tenant_id": "acme", "resource_id": "a_b", "user": "x"},
    }
    for name, identity in cases.items():
        async def scenario(backend, identity=identity):
            memories, _ = await populate(backend)
            await memories[("acme", "a_b", "t1")].export_resource(identity)

        async def erase(backend, identity=identity):
            memories, _ = await populate(backend)
            await memories[("acme", "a_b", "t1")].forget_resource(identity)

        assert await backends.run(scenario) == Raised(IdentityMismatchError), name
        assert await backends.run(erase) == Raised(IdentityMismatchError), name

    async def thread_cursor(backend):
        memories, _ = await populate(backend)
        await memories[("acme", "a_b", "t1")].export_resource(USER, cursor=encode_cursor(1, "x"))

    assert await backends.run(thread_cursor) == Raised(InvalidCursorError)


async def test_forget_resource_erases_every_thread_in_bounded_batches_and_holds_win(backends):
    async def scenario(backend):
        hooked: list[list[str]] = []
        memories, agent = await populate(backend, on_invalidate=hooked.append)
        hooked.clear()  # the holds of populate() ran it too
        reader = memories[("acme", "a_b", "t2")]
        batches, cursor = [], None
        while True:
            result = await reader.forget_resource(USER, cursor=cursor, batch_size=4)
            batches.append((result.deleted, result.held))
            if result.next_cursor is None:
                break
            cursor = result.next_cursor
        left = await reader.config.vector_store.list_by_resource(Scope("acme", "a_b"), None, 200)
        untouched = {scope: await memory.count_resource() for scope, memory in memories.items() if scope[1] != "a_b"
                     or scope[0] != "acme"}
        recalled = [hit.id for hit in (await reader.recall("tea cat", top_k=32, across_threads=True)).hits]
        return batches, hooked, [(record.thread_id, record.id, record.legal_hold) for record in left], \
            sorted(untouched.values()), await agent.count_resource(), recalled

    batches, hooked, left, untouched, agent_count, recalled = await backends.run(scenario)
    # 15 entries, 4 per batch (the derived entry goes with its sources' batch, as a lineage dependent).
    assert sum(deleted for deleted, _ in batches) == 12 and sum(held for _, held in batches) == 3
    assert len(batches) == 4
    assert left == [[thread, f"acme.a_b.{thread}-held", True] for thread in ("t1", "t10", "t2")]
    # The hook ran once per thread of each batch, before the deletes, with what the batch tombstoned.
    assert sorted(entry for ids in hooked for entry in ids) == sorted(
        f"acme.a_b.{thread}-{n}" for thread in ("t1", "t10", "t2") for n in ("1", "2", "legacy", "derived"))
    assert all(len({entry.split("-")[0] for entry in ids}) == 1 for ids in hooked)
    assert untouched == [5, 5] and agent_count == 1 and recalled == []


async def test_no_lineage_stops_a_batch_of_the_resource_erasure(backends):
    async def scenario(backend):
        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1")
        roots = [{"id": f"root-{n}", "text": f"root {n}", "sequence": n} for n in range(4)]
        derived = [{"id": f"d{n}-{k}", "text": "derived fact", "sequence": 100 + n * 100 + k,
                    "lineage": MemoryLineage((f"root-{n}",))} for n in range(4) for k in range(100)]
        await memory.remember(roots + derived, wait=True)
        first = await memory.forget_resource(USER, batch_size=4)  # 400 edges below the batch: walked in steps
        lone = backend.memory(tenant_id="acme", resource_id="x_y", thread_id="t1")
        await lone.remember([{"id": "root", "text": "root", "sequence": 0}] + [
            {"id": f"e{k}", "text": "derived", "sequence": 1 + k, "lineage": MemoryLineage(("root",))} for k in range(300)],
            wait=True)
        whole = await lone.forget_resource({"tenant_id": "acme", "resource_id": "x_y"})
        return first.deleted, first.held, first.next_cursor is not None, await memory.count_resource(), \
            whole.deleted, await lone.count_resource()

    assert await backends.run(scenario) == [404, 0, True, 0, 301, 0]


async def test_the_store_calls_refuse_bad_cursors_limits_and_untombstoned_bodies(backends):
    resource = Scope("acme", "a_b")
    cases = {
        "blank cursor thread": (lambda store: store.list_by_resource(resource, (" ", 1, "x"), 10), LimitExceededError),
        "cursor of two": (lambda store: store.list_by_resource(resource, (1, "x"), 10), InvalidCursorError),
        "limit 0": (lambda store: store.list_by_resource(resource, None, 0), LimitExceededError),
        "limit 201": (lambda store: store.list_by_resource(resource, None, 201), LimitExceededError),
        "batch 65": (lambda store: store.invalidate_resource(resource, None, 65), LimitExceededError),
        "blank resource": (lambda store: store.count_by_resource(Scope("acme", " ")), InvalidScopeError),
        "no pairs": (lambda store: store.purge_resource(resource, []), LimitExceededError),
        "65 pairs": (lambda store: store.purge_resource(resource, [("t1", f"x{n}") for n in range(65)]), LimitExceededError),
        "untombstoned": (lambda store: store.purge_resource(resource, [("t1", "acme.a_b.t1-1")]), LifecycleOrderError),
    }
    for name, (call, error) in cases.items():
        async def scenario(backend, call=call):
            await populate(backend)
            await call(backend.vector_store)

        outcome = await backends.run(scenario)
        assert isinstance(outcome, Raised) and issubclass(outcome.error, error), (name, outcome)

    async def atomic(backend):
        """A purge that fails in its second thread deletes nothing in its first."""
        memories, _ = await populate(backend)
        store = backend.vector_store
        await store.invalidate(Scope("acme", "a_b", "t1"), ["acme.a_b.t1-1"], "deleted")
        try:
            await store.purge_resource(resource, [("t1", "acme.a_b.t1-1"), ("t2", "acme.a_b.t2-1")])
        except LifecycleOrderError:
            pass
        return await store.count_by_resource(resource)

    assert await backends.run(atomic) == 15


def test_a_resource_is_erased_from_psql(pg_dsn):
    """The SQL functions alone: one loop of invalidate_resource_v1 and purge_resource_v1 calls."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for thread in ("t1", "t2"):
            conn.execute(
                "select prism_memory.remember_v3('acme', 'a_b', %s, array['m1', 'm2'], array['one', 'two'], "
                "array[array_fill(1, array[64])::vector, array_fill(1, array[64])::vector])", (thread,))
        conn.execute("select prism_memory.remember_v3('acme', 'a-b', 't1', array['m1'], array['other'], "
                     "array[array_fill(1, array[64])::vector])")
        cursor, deleted = (None, None, None), 0
        while True:
            rows = conn.execute(
                "select thread_id, entry_id, sequence, held, picked from prism_memory.invalidate_resource_v1("
                "'acme', 'a_b', %s, %s, %s, p_limit => 3)", cursor).fetchall()
            doomed = [(thread, entry) for thread, entry, _, held, _ in rows if not held]
            if doomed:
                deleted += conn.execute("select prism_memory.purge_resource_v1('acme', 'a_b', %s, %s)",
                                        ([t for t, _ in doomed], [e for _, e in doomed])).fetchone()[0]
            picked = [row for row in rows if row[4]]
            if len(picked) < 3:
                break
            cursor = (picked[-1][0], picked[-1][2], picked[-1][1])
        assert deleted == 4
        assert conn.execute("select prism_memory.count_resource_entries_v1('acme', 'a_b')").fetchone() == (0,)
        assert conn.execute("select prism_memory.count_resource_entries_v1('acme', 'a-b')").fetchone() == (1,)


@pytest.mark.parametrize("cursor", ["c1.e30=", "r1.bm90IGpzb24=", "r1." + "W1siYSJdLDEsIngiXQ==", 7])
async def test_malformed_resource_cursors_are_refused(backends, cursor):
    async def scenario(backend):
        await backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1").export_resource(USER, cursor=cursor)

    assert await backends.run(scenario) == Raised(InvalidCursorError)
