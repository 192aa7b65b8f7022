"""Lifecycle orchestration: for each write and lifecycle operation, the order of its embedder, store and
``on_invalidate`` calls (``correct``, ``set_consent``, ``forget``, ``apply_retention``, ``export_memory``,
``rebuild_index``).

:class:`~prism_memory.memory.Memory` checks each call's input, waits for its
pending writes (:meth:`~prism_memory.write_queue.WriteQueue.settle`), then
calls one function here with checked values. The rules themselves (consent,
lineage invalidation, legal hold, retention candidates) are the store's: the
SQL functions on Postgres, the emulator in memory. The order kept here:
tombstones land, then ``on_invalidate`` runs, then bodies are deleted.
"""

from __future__ import annotations

import asyncio
import inspect
from datetime import datetime
from typing import Any

from .checks import embedding_labels
from .config import MemoryConfig
from .embedding import embed_batched
from .errors import OperationTimeoutError
from .export import encode_cursor, encode_resource_cursor, export_page
from .types import (
    ConsentChange,
    EntryRecord,
    ExportPage,
    ForgetResult,
    MemoryEntry,
    MemoryRecord,
    RebuildResult,
    RecallSelection,
    ResourceErasure,
    RetentionResult,
    Scope,
)
from .write_queue import WriteQueue

#: Forget and retention delete at most this many bodies per call.
DELETE_BATCH = 64


async def run_invalidation_hook(config: MemoryConfig, ids: list[str]) -> None:
    """Call ``config.on_invalidate`` with a copy of ``ids`` (awaited if it returns an awaitable).

    Nothing happens without a hook or without ids. Callers run it after the
    tombstones landed and before deleting any body; an exception from the
    hook propagates, and then nothing is deleted.
    """
    if ids and config.on_invalidate is not None:
        outcome = config.on_invalidate(list(ids))
        if inspect.isawaitable(outcome):
            await outcome


async def write_entries(
    config: MemoryConfig, writes: WriteQueue, scope: Scope, items: list[MemoryEntry], metadata: list[dict[str, Any]]
) -> int:
    """Embed and store checked, redacted ``items`` (with their checked ``metadata`` documents) in one call.

    Holds ``writes.ordered()`` while embedding (``limits.embed_batch`` texts
    per embedder call) and storing, so automatic sequences follow call order;
    then runs the hook for entries stored invalidated (their lineage source
    already was). Returns how many entries were written. Raises the
    embedder's errors (:class:`InvalidEmbeddingError`,
    :class:`DimensionMismatchError`, :class:`EmbeddingFailedError`) and the
    store's, with nothing written.
    """
    async with writes.ordered():
        vectors = await embed_batched(
            config.embedder, [item.text for item in items], config.limits.embed_batch, embedding_labels([item.id for item in items])
        )
        records = [
            EntryRecord(item.id, item.text, vector, meta, item.sequence, item.importance, item.consent,
                        item.expires_at, item.ttl, item.occurred_at)
            for item, vector, meta in zip(items, vectors, metadata)
        ]
        written, invalidated = await config.vector_store.remember(scope, records, now=config.now(), model=config.model)
    await run_invalidation_hook(config, invalidated)
    return written


async def set_consent(config: MemoryConfig, thread: Scope, entry_id: str, change: ConsentChange) -> MemoryRecord:
    """Apply a checked consent ``change`` to one entry; returns the updated record, redacted.

    A revoke invalidates the entry and its lineage dependents in the same
    store call; the hook runs after. Raises the store's
    :class:`EntryNotFoundError` and :class:`LineageLimitError`.
    """
    record, invalidated = await config.vector_store.set_consent(thread, entry_id, change, now=config.now())
    await run_invalidation_hook(config, invalidated)
    return config.redaction.record(record)


async def correct(config: MemoryConfig, thread: Scope, entry_id: str, text: str) -> MemoryRecord:
    """Re-embed the checked, redacted ``text`` and store it as the entry's text; returns the record, redacted.

    The store marks the entry's lineage ``corrected`` and invalidates its
    dependents; the hook runs after. Raises the embedder's errors and the
    store's :class:`EntryNotFoundError`.
    """
    [vector] = await embed_batched(config.embedder, [text], 1, embedding_labels([entry_id]))
    record, invalidated = await config.vector_store.correct(thread, entry_id, text, vector, now=config.now(), model=config.model)
    await run_invalidation_hook(config, invalidated)
    return config.redaction.record(record)


async def erase(config: MemoryConfig, thread: Scope, ids: list[str], reason: str, now: datetime) -> list[str]:
    """Tombstone ``ids`` (at most :data:`DELETE_BATCH`) with an erasure's ``reason`` and every entry derived from them,
    transitively; returns every id tombstoned or reached, in the order the store gave them.

    Each store call (``erase_walk``) walks a bounded part of the lineage and never refuses; while it reports walks
    still pending in the thread, it is called again with no ids, so the erasure always finishes, whatever lineage the
    tenant wrote, one bounded transaction at a time. Every tombstone lands before this returns: run the hook and
    delete after it.
    """
    tombstoned, pending = await config.vector_store.erase_walk(thread, ids, reason, now=now)
    while pending:
        more, pending = await config.vector_store.erase_walk(thread, [], reason, now=now)
        tombstoned += more
    return list(dict.fromkeys(tombstoned))


async def purge(config: MemoryConfig, thread: Scope, ids: list[str]) -> ForgetResult:
    """Delete the tombstoned, unheld bodies of ``ids``, :data:`DELETE_BATCH` per store call; an id a write stored
    again since its tombstone is kept and named in the result, never raised, so it stops no other deletion."""
    deleted, kept = 0, []
    for start in range(0, len(ids), DELETE_BATCH):
        count, overtaken = await config.vector_store.purge_tombstoned(thread, ids[start : start + DELETE_BATCH])
        deleted, kept = deleted + count, kept + overtaken
    return ForgetResult(deleted, sorted(kept))


async def forget(
    config: MemoryConfig, thread: Scope, ids: list[str], hold: bool, erase_derived: bool = False
) -> ForgetResult:
    """Tombstone ``ids`` (1 to :data:`DELETE_BATCH` unique ids) and their dependents (:func:`erase`), run the hook,
    then delete (:func:`purge`).

    With ``hold`` the entries are put under legal hold instead and nothing is
    deleted (returns 0). Otherwise deletes the bodies of ``ids`` and, with
    ``erase_derived``, of every entry the lineage walk tombstoned because of
    them (derived copies of what is forgotten); held entries are never deleted.
    Returns a :class:`ForgetResult`: the bodies deleted, the ids kept because a write stored them again
    meanwhile, and the ``ids`` the walk did not reach (no entry of the thread). The tombstones land first,
    so an interrupted erasure leaves only tombstoned (never injected) bodies, and calling again finishes it.
    """
    now = config.now()
    invalidated = await erase(config, thread, ids, "held" if hold else "deleted", now)
    await run_invalidation_hook(config, invalidated)
    reached = set(invalidated)
    not_found = [entry_id for entry_id in ids if entry_id not in reached]
    if hold:
        return ForgetResult(0, not_found=not_found)
    purged = await purge(config, thread, list(dict.fromkeys([*ids, *invalidated])) if erase_derived else ids)
    return ForgetResult(purged.deleted, purged.kept, not_found)


async def apply_retention(
    config: MemoryConfig, thread: Scope, max_age_days: float | None, max_entries: int | None, batch_size: int
) -> RetentionResult:
    """One sweep: up to ``batch_size`` store-chosen candidates (older than ``max_age_days`` 24-hour days, or
    beyond the newest ``max_entries``), held ones skipped; the rest are tombstoned as ``expired`` (:func:`erase`),
    the hook runs, then they are deleted. Returns ``RetentionResult(deleted, scanned)``."""
    now = config.now()
    candidates = await config.vector_store.retention_candidates(
        thread, None if max_age_days is None else float(max_age_days), max_entries, batch_size, now=now
    )
    doomed = [entry_id for entry_id, held in candidates if not held]
    if not doomed:
        return RetentionResult(0, len(candidates))
    invalidated = await erase(config, thread, doomed, "expired", now)
    await run_invalidation_hook(config, invalidated)
    return RetentionResult((await purge(config, thread, doomed)).deleted, len(candidates))


async def export_memory(
    config: MemoryConfig, thread: Scope, after: tuple[int, str] | None, limit: int, max_bytes: int, max_ms: int,
    selection: RecallSelection | None = None,
) -> ExportPage:
    """Read up to ``limit`` exportable records ``selection`` keeps after the decoded cursor ``after`` within
    ``max_ms`` milliseconds (else :class:`OperationTimeoutError`), then cut the redacted page (:func:`export_page`)."""
    try:
        async with asyncio.timeout(max_ms / 1000):
            records = await config.vector_store.list_by_thread(thread, after, limit, exportable=True, now=config.now(),
                                                               selection=selection)
    except TimeoutError as exc:
        raise OperationTimeoutError(f"export page took longer than {max_ms} ms") from exc
    return export_page(records, limit, max_bytes, config.redaction.record)


async def export_resource(
    config: MemoryConfig, after: tuple[str, int, str] | None, limit: int, max_bytes: int, max_ms: int,
    selection: RecallSelection | None = None,
) -> ExportPage:
    """:func:`export_memory` over every thread of the memory's tenant and resource: records in (thread, sequence,
    id) order, each naming its thread, and a resource cursor (:func:`encode_resource_cursor`)."""
    try:
        async with asyncio.timeout(max_ms / 1000):
            records = await config.vector_store.list_by_resource(config.scope, after, limit, exportable=True,
                                                                 now=config.now(), selection=selection)
    except TimeoutError as exc:
        raise OperationTimeoutError(f"export page took longer than {max_ms} ms") from exc
    return export_page(records, limit, max_bytes, config.redaction.record,
                       lambda record: encode_resource_cursor(record.thread_id, record.sequence, record.id))


async def forget_resource(
    config: MemoryConfig, after: tuple[str, int, str] | None, batch_size: int, expired_only: bool = False
) -> ResourceErasure:
    """One batch of erasing everything the memory's resource holds (with ``expired_only``: what has expired, the
    resource-wide retention sweep): the next ``batch_size`` (1 to :data:`DELETE_BATCH`) such entries of all its
    threads after ``after`` are tombstoned with their lineage dependents (held ones kept), then ``on_invalidate``
    runs once per thread with that thread's invalidated ids (in thread order), then the bodies are deleted,
    :data:`DELETE_BATCH` per store call: the batch's and, when erasing, the dependents' (a sweep leaves the
    dependents tombstoned, as :func:`apply_retention` does).

    No lineage stops a batch: the store's walk is bounded and never refuses, and a thread's walk it left pending is
    finished here (:func:`erase` with no ids) before the hook runs. ``next_cursor`` is ``None`` once a batch comes
    back short of its size.
    """
    now = config.now()
    rows = await config.vector_store.invalidate_resource(config.scope, after, batch_size, expired_only=expired_only,
                                                         now=now)
    reason = "expired" if expired_only else "deleted"
    for thread_id in sorted({row[0] for row in rows if not (row[3] and row[4])}):
        thread = Scope(config.scope.tenant_id, config.scope.resource_id, thread_id)
        known = {row[1] for row in rows if row[0] == thread_id}
        rows += [(thread_id, entry_id, 0, False, False)
                 for entry_id in await erase(config, thread, [], reason, now) if entry_id not in known]
    picked = [row for row in rows if row[4]]
    invalidated: dict[str, list[str]] = {}  # per thread: what the batch tombstoned (a held dependent too)
    for thread_id, entry_id, _sequence, held, was_picked in rows:
        if not (held and was_picked):
            invalidated.setdefault(thread_id, []).append(entry_id)
    for thread_id in sorted(invalidated):
        await run_invalidation_hook(config, invalidated[thread_id])
    # A sweep deletes only what has expired; the dependents its walks tombstoned keep their bodies, as in
    # apply_retention. An erase deletes the dependents too (they are the resource's).
    doomed = [(thread_id, entry_id) for thread_id, entry_id, _sequence, held, was_picked in rows
              if not held and (was_picked or not expired_only)]
    deleted = 0
    for start in range(0, len(doomed), DELETE_BATCH):
        deleted += await config.vector_store.purge_resource(config.scope, doomed[start : start + DELETE_BATCH])
    last = picked[-1] if picked else None
    done = len(picked) < batch_size
    return ResourceErasure(
        deleted, sum(1 for row in picked if row[3]),
        None if done or last is None else encode_resource_cursor(last[0], last[2], last[1]),
    )


async def rebuild_index(
    config: MemoryConfig, thread: Scope, after: tuple[int, str] | None, batch_size: int, max_ms: int
) -> RebuildResult:
    """Read up to ``batch_size`` records after ``after`` and embed their stored text within ``max_ms``
    milliseconds (else :class:`OperationTimeoutError`, nothing written), then write the embeddings in one
    store call, which also switches the thread's recorded embedding model to the embedder's (the way to
    move a thread to a new model). ``next_cursor`` is ``None`` once a page comes back short of ``batch_size``."""
    try:
        async with asyncio.timeout(max_ms / 1000):
            records = await config.vector_store.list_by_thread(thread, after, batch_size)
            vectors = await embed_batched(
                config.embedder, [record.text for record in records], config.limits.embed_batch,
                embedding_labels([record.id for record in records]),
            )
    except TimeoutError as exc:
        raise OperationTimeoutError(f"rebuild page took longer than {max_ms} ms; nothing was written") from exc
    rebuilt = (
        await config.vector_store.reembed(
            thread, [record.id for record in records], [record.text for record in records], vectors, model=config.model
        )
        if records
        else 0
    )
    last = records[-1] if records else None
    done = len(records) < batch_size
    return RebuildResult(rebuilt, None if done or last is None else encode_cursor(last.sequence, last.id))
