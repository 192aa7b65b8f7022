"""Erasure and retention always finish, on both backends: no lineage a tenant writes (hundreds of dependents,
chains far deeper than the walk's caps) makes ``forget``, ``apply_retention`` or ``apply_resource_retention``
refuse, and a ``remember`` that writes an id again while a ``forget`` runs leaves that one id stored and
named in the result while every other id is forgotten (with real concurrent connections on Postgres).
Look-alike scopes (``a_b``/``a-b``) hold the same ids and keep them.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import psycopg
from prism_memory import ForgetResult, MemoryConsent, MemoryLineage, Scope, create_hash_embedder

from conftest import TEST_CONFIG, TEST_DIMENSIONS
from parity import Clock

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)
USER = MemoryConsent(scope="user")


def hostile_lineage(prefix: str = "") -> list[dict]:
    """A hub with 300 direct dependents and a chain of 30 below it: past both walk caps (256 edges, depth 8)."""
    entries = [{"id": f"{prefix}hub", "text": "the hub fact", "consent": USER}]
    entries += [{"id": f"{prefix}leaf-{n:03d}", "text": f"hub leaf {n}", "consent": USER,
                 "lineage": MemoryLineage((f"{prefix}hub",))} for n in range(300)]
    entries += [{"id": f"{prefix}chain-{n:02d}", "text": f"hub chain {n}", "consent": USER,
                 "lineage": MemoryLineage((f"{prefix}chain-{n - 1:02d}" if n else f"{prefix}hub",))} for n in range(30)]
    return entries


async def recalled(memory, query: str) -> list[str]:
    return sorted(hit.id for hit in (await memory.recall(query, top_k=32)).hits)


async def test_forget_finishes_whatever_lineage_lies_below(backends):
    async def scenario(backend):
        hooked = []
        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1", on_invalidate=hooked.append)
        look_alike = backend.memory(tenant_id="acme", resource_id="a-b", thread_id="t1")
        for target in (memory, look_alike):
            await target.remember(hostile_lineage(), wait=True)
        hooked.clear()
        kept = await memory.forget(["hub"])
        first_hooks = list(hooked)
        after_forget = await recalled(memory, "hub"), await memory.count_resource()
        erasing = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t2")
        await erasing.remember(hostile_lineage(), wait=True)
        erased = await erasing.forget(["hub"], erase_derived=True)
        return (int(kept), kept.kept, len(first_hooks), len(first_hooks[0]), after_forget, int(erased),
                await erasing.count_resource(), len(await recalled(look_alike, "hub")),
                await look_alike.count_resource())

    (deleted, kept, hooks, hooked, (recall, stored), erased, left, look_alike_recall,
     look_alike_stored) = await backends.run(scenario)
    assert (deleted, kept, hooks, hooked) == (1, [], 1, 331)  # the hook saw every tombstone, once, before the delete
    assert recall == [] and stored == 330  # the dependents tombstoned, their bodies kept (no erase_derived)
    assert erased == 331 and left == 330  # erase_derived: every derived body of t2 goes too (t1 keeps its 330)
    assert look_alike_recall == 32 and look_alike_stored == 331


async def test_an_interrupted_erasure_walk_is_finished_by_the_next_erasure_in_the_thread(backends):
    async def scenario(backend):
        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1")
        await memory.remember(hostile_lineage() + [{"id": "other", "text": "another fact", "consent": USER}], wait=True)
        store, scope = memory.config.vector_store, memory.config.scope
        first, pending = await store.erase_walk(scope, ["hub"], "deleted")  # the process stops after one step
        left = len(await recalled(memory, "hub"))
        forgotten = await memory.forget(["other"])  # another id of the thread: the walk left pending goes on
        return len(first), pending > 0, left, int(forgotten), await recalled(memory, "hub")

    assert await backends.run(scenario) == [257, True, 32, 1, []]


async def test_retention_sweeps_finish_past_an_expired_entry_with_a_hostile_lineage(backends):
    async def scenario(backend):
        clock = Clock(T0)
        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1", clock=clock)
        later = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t2", clock=clock)
        entries = hostile_lineage()
        entries[0] = {**entries[0], "ttl": timedelta(minutes=5)}
        await memory.remember(entries + [{"id": "note", "text": "a note that stays", "consent": USER}], wait=True)
        await later.remember([{"id": "old", "text": "an expiring note", "consent": USER, "ttl": timedelta(minutes=1)},
                              {"id": "kept", "text": "a kept note", "consent": USER}], wait=True)
        clock.now = T0 + timedelta(hours=1)
        sweeps = []
        while len(sweeps) < 20:
            result = await memory.apply_retention()
            sweeps.append(result.deleted)
            if result.deleted == 0:
                break
        cursor, resource_batches = None, 0
        while resource_batches < 20:
            batch = await later.apply_resource_retention(cursor=cursor)
            resource_batches += 1
            if batch.next_cursor is None:
                break
            cursor = batch.next_cursor
        stored = [record.id for record in await memory.config.vector_store.list_by_resource(
            Scope("acme", "a_b"), None, 200)]
        return sweeps, sorted(stored)

    sweeps, stored = await backends.run(scenario)
    assert sum(sweeps) == 331 and sweeps[-1] == 0  # the hub, everything derived from it (expired with it)
    assert stored == ["kept", "note"]


async def test_a_write_of_an_id_during_its_forget_keeps_that_id_and_forgets_the_others(backends):
    async def scenario(backend):
        async def rewrite(ids):  # between the tombstones and the deletes, another caller writes "b" again
            await writer.remember([{"id": "b", "text": "fact b, written again", "consent": USER}], wait=True)

        memory = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1", on_invalidate=rewrite)
        writer = backend.memory(tenant_id="acme", resource_id="a_b", thread_id="t1")
        await memory.remember([{"id": name, "text": f"fact {name}", "consent": USER} for name in "abc"], wait=True)
        result = await memory.forget(["a", "b", "c"])
        hits = (await memory.recall("fact", top_k=8)).hits
        return isinstance(result, ForgetResult), int(result), result.kept, [(hit.id, hit.text) for hit in hits]

    assert await backends.run(scenario) == [True, 2, ["b"], [["b", "fact b, written again"]]]


async def test_a_concurrent_remember_holding_the_thread_lock_cannot_fail_a_forget(pg_dsn, backends):
    """Postgres, two connections: a remember of one id is open (it holds the thread's lock) when the forget
    reaches its deletes; the delete waits for it, then keeps that id and deletes the rest."""
    async def hold_a_rewrite(ids):
        await other.execute(
            f"select written from {TEST_CONFIG.schema}.remember_v3('acme', 'a_b', 't1', array['b'], "
            "array['fact b, written again'], array[%s::vector])", (str(list(vector)),))
        asyncio.get_running_loop().create_task(commit_later())

    memory = backends.postgres.memory(tenant_id="acme", resource_id="a_b", thread_id="t1",
                                      on_invalidate=hold_a_rewrite)
    await memory.remember([{"id": name, "text": f"fact {name}", "consent": USER} for name in "abc"], wait=True)
    [vector] = await create_hash_embedder(TEST_DIMENSIONS).embed(["fact b, written again"])
    other = await psycopg.AsyncConnection.connect(pg_dsn)
    committed = []

    async def commit_later():
        await asyncio.sleep(0.5)
        committed.append(True)
        await other.commit()

    try:
        result = await memory.forget(["a", "b", "c"])
    finally:
        await other.close()
    assert committed == [True]  # the delete ran after the other transaction committed
    assert (int(result), result.kept) == (2, ["b"])
    assert [hit.id for hit in (await memory.recall("fact", top_k=8)).hits] == ["b"]
