"""A ``remember(wait=True)`` that is cancelled or times out may or may not have stored its entries
(docs/errors.md, "When a call is cancelled or times out"): retried with the same ids it stores each entry
once, with the same content, on both backends, whichever side of the commit the cancellation fell."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from prism_memory import MemoryEntry, create_memory

from conftest import CITUS
from parity import assert_same

ENTRIES = [MemoryEntry("call-1", "Prefers green tea", {"source": "chat"}), MemoryEntry("call-2", "Has a dog called Rex")]


class HeldEmbedder:
    """An embedder whose calls wait until ``release`` is set: a cancellation lands before anything is written."""

    def __init__(self, embedder: Any) -> None:
        self.inner = embedder
        self.dimensions = embedder.dimensions
        self.release = asyncio.Event()

    async def embed(self, texts: list[str]) -> list[list[float]]:
        await self.release.wait()
        return await self.inner.embed(texts)


class SlowAcknowledgement:
    """A vector store whose ``remember`` commits, then waits until ``release`` is set before it returns: a
    cancellation lands after the write committed. Everything else is the wrapped store's."""

    def __init__(self, store: Any) -> None:
        self.inner = store
        self.release = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def remember(self, *args: Any, **kwargs: Any) -> Any:
        written = await self.inner.remember(*args, **kwargs)
        await self.release.wait()
        return written


async def stored(memory: Any) -> list[tuple[str, str, int, dict[str, Any]]]:
    records = await memory.config.vector_store.list_by_thread(memory.config.scope, None, 200)
    return [(record.id, record.text, record.sequence, record.metadata) for record in records]


@pytest.mark.parametrize("cancelled", ["before the commit", "after the commit"])
async def test_a_retry_with_the_same_ids_after_a_timeout_stores_each_entry_once(backends, cancelled):
    async def scenario(backend):
        embedder, store = backend.embedder, backend.vector_store
        if cancelled == "before the commit":
            embedder = held = HeldEmbedder(backend.embedder)
        else:
            store = held = SlowAcknowledgement(backend.vector_store)
        memory = create_memory(tenant_id="t1", resource_id="user-ada", thread_id=f"cancel-{cancelled[:5]}",
                               embedder=embedder, vector_store=store, working_store=backend.working_store)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(memory.remember(ENTRIES, wait=True), 0.2)
        after_timeout = await stored(memory)
        held.release.set()
        retried = await memory.remember(ENTRIES, wait=True)
        again = await memory.remember(ENTRIES, wait=True)
        return {"after_timeout": after_timeout, "retried": retried.accepted, "again": again.accepted,
                "stored": await stored(memory)}

    outcomes = [await scenario(backend) for backend in backends.each]
    assert_same(outcomes[0], outcomes[1], "outcome")
    outcome = outcomes[0]
    committed = [("call-1", "Prefers green tea", 1, {"source": "chat"}), ("call-2", "Has a dog called Rex", 2, {})]
    assert outcome["after_timeout"] == ([] if cancelled == "before the commit" else committed)
    assert outcome["stored"] == committed


@pytest.mark.skipif(CITUS, reason="the thread lock is taken on the tenant's worker under Citus")
async def test_a_remember_cancelled_inside_the_database_rolls_back_and_a_retry_stores_it_once(backends):
    """Postgres: a remember that times out while its statement waits in the database (here for the thread's
    lock, held by another session) is cancelled there and rolls back; the pool's connection stays usable and
    the retry with the same ids stores each entry once."""
    backend = backends.postgres
    memory = backend.memory(thread_id="cancel-in-database")
    key = "t1\x1fuser-ada\x1fcancel-in-database"
    async with await psycopg.AsyncConnection.connect(backends.dsn, autocommit=True) as holder:
        await holder.execute("select pg_advisory_lock(hashtextextended(%s, 0))", [key])
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(memory.remember(ENTRIES, wait=True), 1.0)
        await holder.execute("select pg_advisory_unlock(hashtextextended(%s, 0))", [key])
    assert await stored(memory) == []
    assert (await memory.remember(ENTRIES, wait=True)).accepted == 2
    assert (await memory.remember(ENTRIES, wait=True)).accepted == 2
    assert [entry[:3] for entry in await stored(memory)] == [("call-1", "Prefers green tea", 1),
                                                             ("call-2", "Has a dog called Rex", 2)]
