"""PostgreSQL/pgvector stores: thin typed callers of the versioned SQL functions."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from ..checks import (
    as_utc,
    check_aware,
    check_bool,
    check_int,
    check_model,
    check_now,
    check_scope_id,
    check_text,
    check_texts,
    real_number,
    scope_texts,
    scoring_numbers,
)
from ..embedding import embedding_values
from ..errors import (
    InvalidEntryError,
    InvalidQueryError,
    LimitExceededError,
    WorkingMemoryValidationError,
)
from ..explain import explain_hits
from ..jsoncodec import json_text
from ..schema import SchemaConfig
from ..scoring import LEXICAL_WEIGHT, check_lexical_weight
from ..selection import WINDOW_BOUNDS, check_selection
from ..store_arguments import (
    check_batch_writes,
    consent_change_arguments,
    correction_arguments,
    page_arguments,
    record_arguments,
    reembed_arguments,
    resource_cursor_arguments,
    resource_entry_arguments,
    retention_arguments,
)
from ..types import (
    AdjacentEntry,
    ConsentChange,
    EmbeddingModel,
    EntryRecord,
    MemoryConsent,
    MemoryRecord,
    RecallHit,
    RecallResult,
    RecallScoringOptions,
    RecallSelection,
    RetentionPolicy,
    Scope,
    WorkingMemoryRecord,
)
from .connections import fetch
from .queries import Queries
from .rag import PostgresRagStore, PostgresRagTransaction, pooled_transaction


class _PostgresBase:
    def __init__(
        self, pool: AsyncConnectionPool, config: SchemaConfig, queries: Queries, distributed: bool = False
    ) -> None:
        self.pool = pool
        self.config = config
        self.queries = queries
        #: A Citus-distributed install: writes run in a transaction block (see :func:`fetch`).
        self.distributed = distributed

    async def _fetch(
        self, query: Any, params: Sequence[Any], read: bool = False, guard: tuple[Any, Sequence[Any]] | None = None,
        binary: bool = False,
    ) -> list[tuple[Any, ...]]:
        """Run one named query on a pooled connection; psycopg errors become typed errors.

        ``read=True`` marks a query that changes nothing: only such a query is
        sent again (once) when its connection is lost after it was sent; any
        other is sent once, on a connection checked just before
        (:mod:`prism_memory.postgres.connections` holds the rule). ``guard``
        (a named query and its parameters) is sent first on the same
        connection, in the write's transaction (:data:`prism_memory.operations.GUARDS`). ``binary``: the rows
        in the binary format (:func:`~prism_memory.postgres.connections.fetch`).
        """
        return await fetch(self.pool, query, params, read, in_transaction=self.distributed and not read, guard=guard,
                           binary=binary)

    def _use_model(
        self, tenant_id: str, threads: Sequence[tuple[str, str | None]], model: EmbeddingModel | None, switch: bool = False
    ) -> tuple[Any, Sequence[Any]] | None:
        """The ``use_embedding_model_v1`` guard of a write to ``threads`` ((resource, thread) pairs), or
        ``None`` without a model (an embedder without an identity: the width rule alone)."""
        if model is None:
            return None
        return (
            self.queries.use_embedding_model,
            (tenant_id, [resource for resource, _ in threads], [thread for _, thread in threads],
             model.model_id, model.dimensions, switch),
        )

    async def close(self) -> None:
        """Close the pool (shared by the stores of one :class:`PostgresMemoryStores`)."""
        await self.pool.close()


class PostgresVectorStore(_PostgresBase, PostgresRagStore):
    """:class:`prism_memory.stores.VectorStore` over ``remember_v3`` / ``recall_v4`` and friends, and
    :class:`prism_memory.stores.RagVectorStore` over the ``rag_*_v1`` functions (:class:`PostgresRagStore`).

    Python checks only what SQL cannot see (:mod:`prism_memory.checks`: types
    and encodings); the SQL functions check the rules and raise SQLSTATEs that
    map to the error types the emulator raises.
    """

    def transaction(self) -> AbstractAsyncContextManager[PostgresRagTransaction]:
        """All or nothing: ``async with store.transaction() as tx:`` runs ``tx``'s RAG calls on one
        pooled connection in one transaction, committed when the block exits cleanly and rolled
        back when it raises (or is cancelled)."""
        return pooled_transaction(self.pool, self.config, self.queries)

    async def remember(
        self, scope: Scope, records: Sequence[EntryRecord], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> tuple[int, list[str]]:
        """One ``remember_v3`` call (after ``use_embedding_model_v1`` with a ``model``, in its transaction): the
        batch is written in one transaction or not at all."""
        scope_ids = _scope(scope)
        arrays = _entry_arrays(records)
        now = check_now(now)
        check_model(model, [len(vector) for vector in arrays[2]])
        guard = self._use_model(scope_ids[0], [scope_ids[1:]], model) if records else None
        [(written, invalidated)] = await self._fetch(self.queries.remember, (*scope_ids, *arrays, now), guard=guard)
        return int(written), list(invalidated)

    async def remember_batch(
        self, writes: Sequence[tuple[Scope, Sequence[EntryRecord]]], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> list[tuple[int, list[str]]]:
        """One ``remember_batch_v3`` call for all of ``writes`` (one tenant); each thread's rows go contiguously.
        With a ``model``, ``use_embedding_model_v1`` guards every thread that gets rows, in the same transaction."""
        check_batch_writes(writes)
        records = [record for _, batch in writes for record in batch]
        arrays = _entry_arrays(records)
        now = check_now(now)
        check_model(model, [len(vector) for vector in arrays[2]])
        if not records:
            return [(0, []) for _ in writes]
        threads = [(scope.resource_id, scope.thread_id) for scope, batch in writes if batch]
        rows = await self._fetch(
            self.queries.remember_batch,
            (
                writes[0][0].tenant_id,
                [scope.resource_id for scope, batch in writes for _ in batch],
                [scope.thread_id for scope, batch in writes for _ in batch],
                *arrays,
                now,
            ),
            guard=self._use_model(writes[0][0].tenant_id, threads, model),
        )
        by_thread = {(resource_id, thread_id): (int(written), list(invalidated))
                     for resource_id, thread_id, written, invalidated in rows}
        return [by_thread.get((scope.resource_id, scope.thread_id), (0, [])) for scope, _batch in writes]

    async def recall(
        self,
        scope: Scope,
        query_embedding: Sequence[float],
        query_text: str,
        top_k: int,
        message_range: int,
        require_consent: bool = False,
        share_from_parent_thread_id: str | None = None,
        now: datetime | None = None,
        scoring: RecallScoringOptions | None = None,
        explain: bool = False,
        across_threads: bool = False,
        model: EmbeddingModel | None = None,
        selection: RecallSelection | None = None,
        lexical_weight: float = LEXICAL_WEIGHT,
    ) -> RecallResult:
        """One ``recall_v4`` call (with a ``model``, the embedding-model guard in the same call); rows come back
        hits first (by rank), then gate counts, then adjacent entries."""
        scope_ids = _scope(scope)
        vector = embedding_values(query_embedding, "the query embedding")
        check_text(query_text, "the query text", InvalidQueryError)
        if share_from_parent_thread_id is not None:  # here before the scoring, as the emulator; recall_v4 after it
            check_scope_id("share_from_parent_thread_id", share_from_parent_thread_id)
        scoring = scoring_numbers(scoring)
        selection = check_selection(selection)
        check_bool(explain, "explain")
        check_bool(across_threads, "across_threads")
        now = check_now(now)
        check_model(model, [len(vector)])
        lexical_weight = check_lexical_weight(lexical_weight)
        rows = await self._fetch(
            self.queries.recall,
            (
                *scope_ids,
                np.asarray(vector, dtype=np.float32),
                query_text,
                top_k,
                message_range,
                require_consent,
                share_from_parent_thread_id,
                across_threads,
                now,
                None if scoring is None else scoring.recency_weight,
                None if scoring is None else scoring.importance_weight,
                None if scoring is None else scoring.half_life_ms,
                explain,
                None if model is None else model.model_id,
                *_selection_arguments(selection),
                lexical_weight,
            ),
            read=True,
            binary=True,  # a recall's rows parse faster so (ten hits' times, scores and metadata)
        )
        hits: list[RecallHit] = []
        adjacent: list[AdjacentEntry] = []
        removed: dict[str, int] = {}
        weights: dict[str, float] | None = None
        for (kind, rank, resource_id, thread_id, entry_id, text, metadata, sequence, importance,
             similarity, lexical, recency, score, created_at, updated_at) in rows:
            if kind == "hit":
                hits.append(RecallHit(id=entry_id, text=text, metadata=metadata, sequence=sequence, score=score,
                                      similarity=similarity, lexical=lexical, importance=importance,
                                      thread_id=thread_id, resource_id=resource_id, recency=recency,
                                      created_at=created_at, updated_at=updated_at))
            elif kind == "gate":
                removed[entry_id] = rank
                if similarity is not None:  # the normalised weights, with composite scoring
                    weights = {"similarity": similarity, "recency": recency, "importance": importance}
            else:
                adjacent.append(AdjacentEntry(id=entry_id, text=text, metadata=metadata, sequence=sequence,
                                              importance=importance, thread_id=thread_id, resource_id=resource_id))
        return RecallResult(hits, adjacent, explain_hits(hits, weights, removed) if explain else None)

    async def share_with(
        self,
        scope: Scope,
        child_resource_id: str,
        child_thread_id: str,
        source_ids: Sequence[str],
        expires_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int:
        """One ``share_with_v1`` call: grant (or, with no ids, revoke) the child's read of ``source_ids``."""
        child = _scope(Scope(scope.tenant_id, child_resource_id, child_thread_id))
        ids = check_texts(source_ids, "shared ids", InvalidEntryError)
        [(granted,)] = await self._fetch(
            self.queries.share_with,
            (*_scope(scope), *child[1:], ids, check_aware(expires_at, "expires_at"), check_now(now)),
        )
        return int(granted)

    async def invalidate(self, scope: Scope, ids: Sequence[str], reason: str, now: datetime | None = None) -> list[str]:
        """One ``invalidate_v1`` call: tombstones land before any body is deleted; returns every invalidated id."""
        arguments = (*_scope(scope), _ids(ids), check_text(reason, "reason", InvalidEntryError), check_now(now))
        rows = await self._fetch(self.queries.invalidate, arguments)
        return [row[0] for row in rows]

    async def purge(self, scope: Scope, ids: Sequence[str]) -> int:
        """One ``purge_v1`` call: deletes tombstoned, unheld bodies."""
        [(deleted,)] = await self._fetch(self.queries.purge, (*_scope(scope), _ids(ids)))
        return int(deleted)

    async def erase_walk(
        self, scope: Scope, ids: Sequence[str], reason: str, now: datetime | None = None
    ) -> tuple[list[str], int]:
        """One ``erase_walk_v1`` call: a bounded part of an erasure's lineage walk; returns the ids tombstoned or
        reached and how many walks stay pending in the thread."""
        arguments = (*_scope(scope), _ids(ids), check_text(reason, "reason", InvalidEntryError), check_now(now))
        [(tombstoned, pending)] = await self._fetch(self.queries.erase_walk, arguments)
        return list(tombstoned), int(pending)

    async def purge_tombstoned(self, scope: Scope, ids: Sequence[str]) -> tuple[int, list[str]]:
        """One ``purge_v2`` call: deletes tombstoned, unheld bodies; returns how many, and the ids kept because a
        write stored them again after their tombstone."""
        [(deleted, kept)] = await self._fetch(self.queries.purge_tombstoned, (*_scope(scope), _ids(ids)))
        return int(deleted), list(kept)

    async def set_consent(
        self, scope: Scope, entry_id: str, change: ConsentChange, now: datetime | None = None
    ) -> tuple[MemoryRecord, list[str]]:
        """One ``set_consent_v1`` call; returns the updated record and the ids it invalidated."""
        scope_ids = _scope(scope)
        check_text(entry_id, "entry_id", InvalidEntryError)
        change = consent_change_arguments(change)
        [row] = await self._fetch(
            self.queries.set_consent,
            (
                *scope_ids,
                entry_id,
                change.visible,
                change.source,
                change.scope,
                change.granted_at,
                change.revoked_at,
                check_now(now),
            ),
        )
        return _record(row)

    async def correct(
        self, scope: Scope, entry_id: str, text: str, embedding: Sequence[float], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> tuple[MemoryRecord, list[str]]:
        """One ``correct_v2`` call (after ``use_embedding_model_v1`` with a ``model``, in its transaction);
        returns the updated record and the ids it invalidated."""
        scope_ids = _scope(scope)
        vector = correction_arguments(entry_id, text, embedding)
        now = check_now(now)
        check_model(model, [len(vector)])
        [row] = await self._fetch(
            self.queries.correct,
            (*scope_ids, entry_id, text, np.asarray(vector, dtype=np.float32), now),
            guard=self._use_model(scope_ids[0], [scope_ids[1:]], model),
        )
        return _record(row)

    async def retention_candidates(
        self,
        scope: Scope,
        max_age_days: float | None,
        max_entries: int | None,
        batch_size: int,
        now: datetime | None = None,
    ) -> list[tuple[str, bool]]:
        """One ``retention_candidates_v2`` call: ``[(entry_id, held)]`` oldest first."""
        scope_ids = _scope(scope)
        max_age_days = retention_arguments(max_age_days, max_entries, batch_size)
        rows = await self._fetch(
            self.queries.retention_candidates, (*scope_ids, max_age_days, max_entries, batch_size, check_now(now)),
            read=True,
        )
        return [(entry_id, held) for entry_id, held in rows]

    async def list_by_thread(
        self, scope: Scope, after: tuple[int, str] | None, limit: int, exportable: bool = False,
        now: datetime | None = None, selection: RecallSelection | None = None,
    ) -> list[MemoryRecord]:
        """One ``list_entries_v3`` call: at most ``limit`` (1..200) entries ``selection`` keeps after the
        (sequence, id) cursor."""
        scope_ids = _scope(scope)
        after_sequence, after_id = page_arguments(after, limit, exportable) or (None, None)
        now = check_now(now)
        selection = check_selection(selection)
        rows = await self._fetch(
            self.queries.list_entries,
            (*scope_ids, after_sequence, after_id, limit, exportable, now, *_selection_arguments(selection)),
            read=True,
        )
        return [_record(row)[0] for row in rows]

    async def count_by_thread(self, scope: Scope) -> int:
        """One ``count_entries_v1`` call."""
        [(count,)] = await self._fetch(self.queries.count_entries, _scope(scope), read=True)
        return int(count)

    async def list_by_resource(
        self, scope: Scope, after: tuple[str, int, str] | None, limit: int, exportable: bool = False,
        now: datetime | None = None, selection: RecallSelection | None = None,
    ) -> list[MemoryRecord]:
        """One ``list_resource_entries_v2`` call: at most ``limit`` (1..200) entries ``selection`` keeps of the
        resource's threads after the (thread_id, sequence, id) cursor, each naming its thread."""
        tenant_id, resource_id, _thread = _scope(scope)
        after = resource_cursor_arguments(after)
        check_int(limit, "limit", LimitExceededError, bits=32)
        check_bool(exportable, "exportable")
        now = check_now(now)
        selection = check_selection(selection)
        rows = await self._fetch(
            self.queries.list_resource_entries,
            (tenant_id, resource_id, *(after or (None, None, None)), limit, exportable, now,
             *_selection_arguments(selection)),
            read=True,
        )
        return [_record((*row[1:-1], None, row[-1]), row[0])[0] for row in rows]

    async def count_by_resource(self, scope: Scope) -> int:
        """One ``count_resource_entries_v1`` call."""
        tenant_id, resource_id, _thread = _scope(scope)
        [(count,)] = await self._fetch(self.queries.count_resource_entries, (tenant_id, resource_id), read=True)
        return int(count)

    async def invalidate_resource(
        self, scope: Scope, after: tuple[str, int, str] | None, limit: int, expired_only: bool = False,
        now: datetime | None = None,
    ) -> list[tuple[str, str, int, bool, bool]]:
        """One ``invalidate_resource_v1`` call: ``(thread_id, entry_id, sequence, held, picked)`` rows."""
        tenant_id, resource_id, _thread = _scope(scope)
        after = resource_cursor_arguments(after)
        check_int(limit, "limit", LimitExceededError, bits=32)
        check_bool(expired_only, "expired_only")
        rows = await self._fetch(
            self.queries.invalidate_resource,
            (tenant_id, resource_id, *(after or (None, None, None)), limit, expired_only, check_now(now)),
        )
        return [(thread_id, entry_id, int(sequence), held, picked) for thread_id, entry_id, sequence, held, picked in rows]

    async def purge_resource(self, scope: Scope, entries: Sequence[tuple[str, str]]) -> int:
        """One ``purge_resource_v1`` call: deletes tombstoned, unheld bodies across the resource's threads."""
        tenant_id, resource_id, _thread = _scope(scope)
        threads, ids = resource_entry_arguments(entries)
        [(deleted,)] = await self._fetch(self.queries.purge_resource, (tenant_id, resource_id, threads, ids))
        return int(deleted)

    async def set_retention_policy(
        self, scope: Scope, max_age_days: float | None, now: datetime | None = None
    ) -> float | None:
        """One ``set_retention_policy_v1`` call (the scope's thread, or its resource without one)."""
        max_age_days = real_number(max_age_days, "max_age_days", LimitExceededError)
        [(stored,)] = await self._fetch(self.queries.set_retention_policy, (*_scope(scope), max_age_days, check_now(now)))
        return stored

    async def get_retention_policy(self, scope: Scope) -> RetentionPolicy:
        """One ``get_retention_policy_v1`` call."""
        [(resource_days, thread_days)] = await self._fetch(self.queries.get_retention_policy, _scope(scope), read=True)
        return RetentionPolicy(resource_days, thread_days)

    async def reembed(
        self, scope: Scope, ids: Sequence[str], texts: Sequence[str], embeddings: Sequence[Sequence[float]],
        model: EmbeddingModel | None = None,
    ) -> int:
        """One ``reembed_v1`` call: new embeddings for entries whose text is still ``texts``. With a ``model``,
        ``use_embedding_model_v1`` first switches the thread's recorded model to it, in the same transaction."""
        scope_ids = _scope(scope)
        vectors = reembed_arguments(ids, texts, embeddings)
        check_model(model, [len(vector) for vector in vectors])
        guard = self._use_model(scope_ids[0], [scope_ids[1:]], model, switch=True) if vectors else None
        [(updated,)] = await self._fetch(
            self.queries.reembed,
            (*scope_ids, list(ids), list(texts), [np.asarray(vector, dtype=np.float32) for vector in vectors]),
            guard=guard,
        )
        return int(updated)


def _scope(scope: Scope) -> tuple[str, str, str | None]:
    """The scope's ids as sent (:func:`scope_texts`); ``assert_scope_v2`` checks them (PM001)."""
    return scope_texts(scope)


def _ids(ids: object) -> list[str]:
    """Entry ids as sent: a list of ``str`` that ``text`` holds, else :class:`InvalidEntryError`."""
    return check_texts(ids, "ids", InvalidEntryError)


def _entry_arrays(records: Sequence[EntryRecord]) -> tuple[list[Any] | None, ...]:
    """The parallel arrays remember_v3 / remember_batch_v3 take, ready to send in binary: ids, texts,
    embeddings, metadata, sequences, importance, consent, expires_at, ttl, occurred_at. An optional column that is absent
    for every record is sent as one NULL array (which the functions read as absent for each entry)."""

    def optional(values: list[Any]) -> list[Any] | None:
        return None if all(value is None for value in values) else values

    arguments = record_arguments(records)
    return (
        [record.id for record in records],
        [record.text for record in records],
        [np.asarray(vector, dtype=np.float32) for _, vector in arguments],
        [Jsonb(metadata, dumps=_as_is) for metadata, _ in arguments],
        optional([record.sequence for record in records]),
        optional([None if record.importance is None else float(record.importance) for record in records]),
        optional([None if record.consent is None else Jsonb(_consent_json(record.consent)) for record in records]),
        optional([as_utc(record.expires_at) for record in records]),
        optional([record.ttl for record in records]),
        optional([as_utc(record.occurred_at) for record in records]),
    )


def _as_is(document: str) -> str:
    """Jsonb's ``dumps`` for a document :func:`record_arguments` already encoded."""
    return document


def _consent_json(consent: MemoryConsent) -> dict[str, Any]:
    """A consent as ``remember_v3`` reads it (timestamps in ISO 8601 with their offset)."""
    return {
        "source": consent.source,
        "scope": consent.scope,
        "visible": consent.visible,
        "grantedAt": None if consent.granted_at is None else consent.granted_at.isoformat(),
        "revokedAt": None if consent.revoked_at is None else consent.revoked_at.isoformat(),
    }


def _record(row: Sequence[Any], thread_id: str | None = None) -> tuple[MemoryRecord, list[str]]:
    """An ``entry_record_v2`` row as (record, invalidated ids); ``thread_id`` for a resource-wide read."""
    (entry_id, text, metadata, sequence, importance, source, scope, visible, granted_at, revoked_at,
     legal_hold, created_at, updated_at, invalidated, occurred_at) = row
    consent = None if source is None else MemoryConsent(source, scope, visible, as_utc(granted_at), as_utc(revoked_at))
    record = MemoryRecord(
        id=entry_id, text=text, metadata=metadata, sequence=sequence, importance=importance, consent=consent,
        legal_hold=legal_hold, created_at=as_utc(created_at), updated_at=as_utc(updated_at), thread_id=thread_id,
        occurred_at=as_utc(occurred_at),
    )
    return record, list(invalidated or [])


class PostgresWorkingStore(_PostgresBase):
    """:class:`prism_memory.stores.WorkingStore` over ``get_working_v1`` / ``update_working_v1``."""

    def _record(self, scope: Scope, row: Any) -> WorkingMemoryRecord:
        data, version, created_at, updated_at = row
        return WorkingMemoryRecord(
            tenant_id=scope.tenant_id, resource_id=scope.resource_id, thread_id=scope.thread_id, data=data,
            version=version, created_at=as_utc(created_at), updated_at=as_utc(updated_at),
        )

    async def get_working(self, scope: Scope) -> WorkingMemoryRecord | None:
        """One ``get_working_v1`` call; ``None`` when no document exists."""
        rows = await self._fetch(self.queries.get_working, _scope(scope), read=True)
        return self._record(scope, rows[0]) if rows else None

    async def update_working(
        self, scope: Scope, data: dict[str, Any], expected_version: int | None
    ) -> WorkingMemoryRecord:
        """One ``update_working_v1`` call (row-locked; a stale ``expected_version`` raises, nothing changes)."""
        document = json_text(data, "working memory", WorkingMemoryValidationError)
        if expected_version is not None:
            check_int(expected_version, "expected_version", LimitExceededError)
        [row] = await self._fetch(
            self.queries.update_working,
            (*_scope(scope), Jsonb(document, dumps=_as_is), expected_version)
        )
        return self._record(scope, row)


def _selection_arguments(selection: RecallSelection | None) -> tuple[Any, ...]:
    """``recall_v4``'s ``p_filter`` and window bounds for a checked selection (``None``: all NULL)."""
    if selection is None:
        return (None,) * (1 + len(WINDOW_BOUNDS))
    return (None if selection.filter is None else Jsonb(selection.filter),
            *(getattr(selection, bound) for bound in WINDOW_BOUNDS))
