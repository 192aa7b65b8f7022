"""Which operations wait for a memory's background writes, and that only ``flush`` re-raises a failed one
(emulator only: the rule is the facade's, the same on every backend; ``test_resilience.py`` runs it on both)."""

import asyncio

import pytest
from prism_memory import EmbeddingFailedError, InvalidEntryError, MemoryConsent, create_hash_embedder, create_memory


class GatedEmbedder:
    """The hash embedder, but ``poison`` texts fail and, while ``gate`` is clear, every embed waits for it."""

    def __init__(self):
        self.inner = create_hash_embedder(64)
        self.dimensions = self.inner.dimensions
        self.gate = asyncio.Event()
        self.gate.set()

    async def embed(self, texts):
        await self.gate.wait()
        if any("poison" in text for text in texts):
            raise RuntimeError("model server unavailable")
        return await self.inner.embed(texts)


async def memory_with_entry():
    embedder = GatedEmbedder()
    memory = create_memory(tenant_id="t", resource_id="r", thread_id="th", embedder=embedder)
    await memory.remember([{"id": "a", "text": "a kept note", "consent": MemoryConsent()}], wait=True)
    return memory, embedder


# Each operation that reads or changes the thread's entries waits for pending writes (and never raises their failure).
SETTLING = {
    "recall": lambda memory: memory.recall("kept note"),
    "share_with": lambda memory: memory.share_with("child", ["a"]),
    "revoke_share": lambda memory: memory.revoke_share("child"),
    "set_consent": lambda memory: memory.set_consent("a", visible=True),
    "correct": lambda memory: memory.correct("a", "a corrected note"),
    "forget": lambda memory: memory.forget(["a"]),
    "apply_retention": lambda memory: memory.apply_retention(max_entries=10),
    "export_memory": lambda memory: memory.export_memory(memory.config.scope),
    "rebuild_index": lambda memory: memory.rebuild_index(),
}

# Working memory and further writes do not wait.
NOT_SETTLING = {
    "get_working": lambda memory: memory.get_working(),
    "update_working": lambda memory: memory.update_working({"name": "Ada"}),
    "render_working": lambda memory: memory.render_working(),
    "remember": lambda memory: memory.remember([{"id": "c", "text": "another note"}]),
}


@pytest.mark.parametrize("operation", sorted({**SETTLING, **NOT_SETTLING}))
async def test_no_operation_raises_a_failed_background_write_flush_does_once(operation):
    memory, _ = await memory_with_entry()
    await memory.remember([{"id": "p", "text": "poison"}])
    await asyncio.sleep(0)
    await {**SETTLING, **NOT_SETTLING}[operation](memory)
    await asyncio.sleep(0.01)  # an operation that does not wait may finish before the write failed
    assert memory.failed_writes == 1
    with pytest.raises(EmbeddingFailedError):
        await memory.flush()
    assert memory.failed_writes == 0
    await memory.flush()


@pytest.mark.parametrize("operation", sorted(NOT_SETTLING))
async def test_working_memory_and_writes_do_not_wait_for_pending_writes(operation):
    memory, embedder = await memory_with_entry()
    embedder.gate.clear()
    started = await memory.remember([{"id": "b", "text": "a slow note"}])
    assert (started.accepted, started.pending, started.done) == (1, 1, False)
    if operation == "remember":
        queued = await NOT_SETTLING[operation](memory)
        assert (queued.accepted, queued.pending, queued.done) == (1, 2, False)
    else:
        await asyncio.wait_for(NOT_SETTLING[operation](memory), 1)
    embedder.gate.set()
    await memory.flush()


@pytest.mark.parametrize("operation", sorted(SETTLING))
async def test_operation_sees_the_writes_started_before_it(operation):
    memory, embedder = await memory_with_entry()
    embedder.gate.clear()
    await memory.remember([{"id": "b", "text": "a slow note", "consent": MemoryConsent()}])
    call = asyncio.create_task(SETTLING[operation](memory))
    await asyncio.sleep(0.01)
    assert not call.done()  # waiting for the pending write
    embedder.gate.set()
    await call
    assert (await memory.remember([])).done


async def test_bad_input_raises_before_waiting_and_leaves_the_failure_for_flush():
    memory, _ = await memory_with_entry()
    await memory.remember([{"id": "p", "text": "poison"}])
    with pytest.raises(InvalidEntryError):
        await memory.forget("a")
    with pytest.raises(EmbeddingFailedError):
        await memory.flush()


async def test_close_logs_a_failed_background_write_and_closes(caplog):
    memory, _ = await memory_with_entry()
    await memory.remember([{"id": "p", "text": "poison"}])
    with caplog.at_level("DEBUG", logger="prism_memory"):
        await memory.close()  # does not raise the failure
    failed = [record for record in caplog.records if record.name == "prism_memory" and record.levelname == "ERROR"]
    assert [record.getMessage() for record in failed] == ["background remember of 1 entries failed: EmbeddingFailedError"]
