"""The public facade: :func:`create_memory` and :class:`Memory` (seed: "createMemory(options)")."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from .embedding import Embedder, embed_batched
from .emulator import create_memory_vector_store, create_memory_working_store
from .errors import ConfigurationError, InvalidQueryError, InvalidScopeError, LimitExceededError, PayloadTooLargeError
from .stores import VectorStore, WorkingStore
from .types import (
    HARD_CAPS,
    EntryRecord,
    MemoryEntry,
    MemoryLimits,
    RecallResult,
    RememberResult,
    Scope,
    WorkingMemoryRecord,
    check_int_option,
)
from .validation import check_entry, check_scope, check_unique_ids, to_entry
from .working import WorkingMemoryHook, WorkingMemoryValidator, render_template

logger = logging.getLogger("prism_memory")


class Memory:
    """Working memory and semantic recall for one tenant / resource / thread scope.

    Build it with :func:`create_memory`. Every method is a coroutine. Writes
    validate all input first and raise a :class:`ValidationError` subclass
    before anything is embedded or written.
    """

    def __init__(
        self,
        scope: Scope,
        embedder: Embedder,
        vector_store: VectorStore,
        working_store: WorkingStore,
        validator: WorkingMemoryValidator,
        working_memory_template: str | None,
        limits: MemoryLimits,
    ) -> None:
        self.scope = scope
        self.embedder = embedder
        self.vector_store = vector_store
        self.working_store = working_store
        self.limits = limits
        self._validator = validator
        self._template = working_memory_template
        self._pending: set[asyncio.Task[int]] = set()
        self._pending_entries = 0
        self._failures: list[BaseException] = []
        self._write_lock = asyncio.Lock()

    # -- working memory -------------------------------------------------

    async def get_working(self) -> WorkingMemoryRecord | None:
        """The scope's working-memory record (thread-scoped when the memory has a thread), or ``None``."""
        return await self.working_store.get_working(self.scope)

    async def update_working(self, data: dict[str, Any], expected_version: int | None = None) -> WorkingMemoryRecord:
        """Replace the working-memory document; returns the record with ``version`` + 1.

        ``data`` must be a JSON object that passes the schema and hook given to
        :func:`create_memory` and fits ``limits.working_memory_bytes``
        (:class:`WorkingMemoryValidationError` / :class:`PayloadTooLargeError`).
        With ``expected_version`` (0 for "no record yet"), a different stored
        version raises :class:`WorkingMemoryVersionConflict` and nothing changes.
        """
        checked = self._validator.check(data)
        if expected_version is not None:
            check_int_option("expected_version", expected_version, 0, 2**63 - 1)
        return await self.working_store.update_working(self.scope, checked, expected_version)

    async def render_working(self) -> str:
        """The working memory rendered through ``working_memory_template`` (compact JSON without one; ``""`` when unset)."""
        record = await self.get_working()
        if record is None:
            return "" if self._template is None else render_template(self._template, {})
        if self._template is None:
            return json.dumps(record.data, ensure_ascii=False, separators=(",", ":"))
        return render_template(self._template, record.data)

    # -- semantic memory ------------------------------------------------

    def _thread_scope(self) -> Scope:
        if self.scope.thread_id is None:
            raise InvalidScopeError("this memory has no thread_id; semantic operations need one")
        return self.scope

    async def remember(
        self, entries: Iterable[MemoryEntry | Mapping[str, Any]], wait: bool = False
    ) -> RememberResult:
        """Embed and store ``entries`` in this thread.

        Every entry is checked first (:class:`InvalidEntryError`,
        :class:`PayloadTooLargeError`, :class:`LimitExceededError` for more than
        ``limits.remember_entries``); nothing is written if one fails. With
        ``wait=False`` (the default, as in the seed) indexing runs in the
        background: the result has ``pending`` > 0 and ``done=False``; await
        :meth:`flush` to finish it and re-raise a failure. With ``wait=True``
        embedding errors (:class:`InvalidEmbeddingError`,
        :class:`DimensionMismatchError`) raise here. A batch is written all or
        nothing.
        """
        scope = self._thread_scope()
        items = [to_entry(entry, position) for position, entry in enumerate(entries, start=1)]
        if len(items) > self.limits.remember_entries:
            raise LimitExceededError(f"{len(items)} entries exceed limits.remember_entries={self.limits.remember_entries}")
        metadata = [check_entry(item, position, self.limits.entry_bytes) for position, item in enumerate(items, start=1)]
        check_unique_ids([item.id for item in items])
        if not items:
            return RememberResult(0, self._pending_entries, not self._pending)
        job = self._write(scope, items, metadata)
        if wait:
            await job
            return RememberResult(len(items), self._pending_entries, not self._pending)
        task = asyncio.create_task(job)
        self._pending.add(task)
        self._pending_entries += len(items)

        def finished(done: asyncio.Task[int]) -> None:
            self._pending.discard(done)
            self._pending_entries -= len(items)
            if not done.cancelled() and done.exception() is not None:
                self._failures.append(done.exception())
                logger.error("background remember of %d entries failed: %r", len(items), done.exception())

        task.add_done_callback(finished)
        return RememberResult(len(items), self._pending_entries, False)

    async def _write(self, scope: Scope, items: list[MemoryEntry], metadata: list[dict[str, Any]]) -> int:
        async with self._write_lock:  # keeps automatic sequences in call order
            vectors = await embed_batched(self.embedder, [item.text for item in items], self.limits.embed_batch)
            records = [
                EntryRecord(item.id, item.text, vector, meta, item.sequence, item.importance)
                for item, vector, meta in zip(items, vectors, metadata)
            ]
            return await self.vector_store.remember(scope, records)

    async def flush(self) -> None:
        """Wait for background ``remember`` calls; re-raise the first failure since the last flush."""
        while self._pending:
            await asyncio.wait(set(self._pending))
        if self._failures:
            failures, self._failures = self._failures, []
            raise failures[0]

    async def recall(self, query: str, top_k: int | None = None, message_range: int | None = None) -> RecallResult:
        """Top-``top_k`` entries of this thread for ``query``, plus adjacent entries.

        ``top_k`` defaults to ``limits.top_k`` (1..32) and ``message_range`` to
        ``limits.message_range`` (0..4): entries within that many sequences of
        a hit come back in ``adjacent``. Waits for this memory's pending
        writes first. Raises :class:`InvalidQueryError` for a blank query or
        one with a NUL or lone surrogate, :class:`PayloadTooLargeError` for one
        over ``limits.query_bytes``, and :class:`LimitExceededError` for an option out of range.
        Score and ordering: README, "Recall score".
        """
        scope = self._thread_scope()
        top_k = check_int_option("top_k", self.limits.top_k if top_k is None else top_k, 1, HARD_CAPS["top_k"])
        message_range = check_int_option(
            "message_range",
            self.limits.message_range if message_range is None else message_range,
            0,
            HARD_CAPS["message_range"],
        )
        if not isinstance(query, str) or not query.strip():
            raise InvalidQueryError("the recall query must be a non-blank string")
        try:
            size = len(query.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise InvalidQueryError("the recall query contains a lone surrogate") from exc
        if "\x00" in query:
            raise InvalidQueryError("the recall query contains a NUL character")
        if size > self.limits.query_bytes:
            raise PayloadTooLargeError(f"the recall query is {size} bytes, over limits.query_bytes={self.limits.query_bytes}")
        await self.flush()
        [vector] = await embed_batched(self.embedder, [query], 1)
        return await self.vector_store.recall(scope, vector, query, top_k, message_range)

    async def close(self) -> None:
        """Finish pending writes (errors are logged, not raised) and close both stores."""
        try:
            await self.flush()
        except Exception as exc:  # already logged by the task callback
            logger.debug("pending write failed before close: %r", exc)
        await self.vector_store.close()
        if self.working_store is not self.vector_store:
            await self.working_store.close()


def create_memory(
    *,
    tenant_id: str,
    resource_id: str,
    thread_id: str | None = None,
    embedder: Embedder,
    vector_store: VectorStore | None = None,
    working_store: WorkingStore | None = None,
    schema: Mapping[str, Any] | None = None,
    validate_working_memory: WorkingMemoryHook | None = None,
    working_memory_template: str | None = None,
    limits: MemoryLimits | None = None,
) -> Memory:
    """Create a :class:`Memory` for one scope (seed: ``createMemory(options)``).

    ``tenant_id`` and ``resource_id`` are required; ``thread_id`` is required
    for ``remember``/``recall`` and optional for working memory (resource-scoped
    without it). Each id is a non-blank string of at most 256 bytes
    (:class:`InvalidScopeError`). ``embedder`` must provide ``dimensions`` and
    ``embed``. The stores default to the in-memory emulator. ``schema`` is a
    JSON Schema for working memory, checked here (:class:`ConfigurationError`
    if invalid). ``limits`` defaults to :class:`MemoryLimits()`.
    """
    scope = check_scope(Scope(tenant_id, resource_id, thread_id), thread_required=False)
    if embedder is None or not isinstance(getattr(embedder, "dimensions", None), int) or not hasattr(embedder, "embed"):
        raise ConfigurationError("embedder must have an int `dimensions` and an async `embed(texts)` method")
    limits = limits or MemoryLimits()
    validator = WorkingMemoryValidator(schema, validate_working_memory, limits.working_memory_bytes)
    return Memory(
        scope,
        embedder,
        vector_store if vector_store is not None else create_memory_vector_store(),
        working_store if working_store is not None else create_memory_working_store(),
        validator,
        working_memory_template,
        limits,
    )
