"""Pure-Python stores that implement the SQL functions' rules.

* similarity follows pgvector's cosine: ``dot / sqrt(|a|^2 * |b|^2)`` clamped
  to [-1, 1], then ``1 - (1 - s)``, over the float32 values pgvector stores.
  pgvector sums the products in float32, the emulator in float64: the two are
  bit-identical whenever the products are exact in float32 (the hash
  embedder's small integers), and otherwise agree to about 1e-7, so entries
  whose scores differ by less than that may swap places;
* lexical uses :func:`prism_memory.lexical.lexical_terms` for entries and
  :func:`prism_memory.lexical.query_terms` for queries, the mirrors of
  ``lexical_terms_v2`` and ``query_terms_v2``;
* ties break on sequence, then id in code-point order (``collate "C"``);
* metadata and working memory are stored as their JSON, like ``jsonb``.

Every operation runs without awaiting in between, so it is atomic under asyncio. The working store's
calls first yield to the event loop, as a round trip to Postgres does, so concurrent read-then-write
callers (working-memory processors) interleave as they do on Postgres.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from ..checks import (
    as_utc,
    check_aware,
    check_batch_writes,
    check_bool,
    check_consent_change,
    check_int,
    check_model,
    check_now,
    check_scope,
    check_scope_id,
    check_scoring,
    check_shared_ids,
    scoring_numbers,
    check_text,
    check_texts,
    consent_change_arguments,
    correction_arguments,
    embedding_labels,
    entry_label,
    is_agent_resource,
    page_arguments,
    real_number,
    record_arguments,
    reembed_arguments,
    resource_cursor_arguments,
    resource_entry_arguments,
    retention_arguments,
    scope_texts,
)
from ..embedding import embedding_values
from ..errors import (
    DimensionMismatchError,
    EmbeddingModelMismatchError,
    EntryNotFoundError,
    InvalidEntryError,
    InvalidQueryError,
    InvalidScopeError,
    LifecycleOrderError,
    LimitExceededError,
    LineageLimitError,
    PayloadTooLargeError,
    WorkingMemoryValidationError,
    WorkingMemoryVersionConflict,
)
from ..explain import explain_hits
from ..jsoncodec import json_document, load_json
from ..lexical import lexical_terms, query_terms
from ..scoring import CANDIDATE_FACTOR, LEXICAL_WEIGHT, importance_used, recency, scoring_weights
from ..types import (
    HARD_CAPS,
    TRAVELLING_SCOPES,
    AdjacentEntry,
    ConsentChange,
    EmbeddingModel,
    EntryRecord,
    MemoryConsent,
    MemoryRecord,
    RecallHit,
    RecallResult,
    RecallScoringOptions,
    RetentionPolicy,
    Scope,
    WorkingMemoryRecord,
    check_int_option,
)
from .rag import EmulatorRagStore
from ..checks import check_expiry_range
from .rules import STORE_WORKING_MEMORY_BYTES, check_records
from .vectors import float32, norm_squared
from .vectors import similarity as cosine_similarity


def _now() -> datetime:
    return datetime.now(timezone.utc)


async def _round_trip() -> None:
    """Let other tasks run first, as a Postgres call's round trip does: concurrent callers then interleave
    between one call and the next (a working-memory read and the conditional write after it) as they do on
    Postgres, and never inside a call, which still runs without awaiting."""
    await asyncio.sleep(0)


@dataclass(slots=True)
class _Row:
    """One entry, with the columns of the entries table (consent unset = legacy)."""

    id: str
    text: str
    metadata: dict[str, Any]
    embedding: np.ndarray  # float32, as pgvector stores it
    norm_squared: float
    terms: frozenset[str]
    sequence: int
    importance: float | None
    consent_source: str | None
    consent_scope: str | None
    consent_visible: bool
    consent_granted_at: datetime | None
    consent_revoked_at: datetime | None
    legal_hold: bool
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None

    def consented(self, require_consent: bool) -> bool:
        """Visible, not revoked, and explicitly consented when ``require_consent``."""
        return self.consent_visible and self.consent_revoked_at is None and (not require_consent or self.consent_source is not None)

    def injectable(self, require_consent: bool) -> bool:
        """Mirror of ``is_injectable_v1``: consented and not under legal hold."""
        return self.consented(require_consent) and not self.legal_hold

    def record(self, invalidated: Sequence[str] = (), thread_id: str | None = None) -> tuple[MemoryRecord, list[str]]:
        consent = (
            None
            if self.consent_source is None
            else MemoryConsent(
                self.consent_source, self.consent_scope, self.consent_visible, self.consent_granted_at, self.consent_revoked_at
            )
        )
        record = MemoryRecord(
            self.id,
            self.text,
            copy.deepcopy(self.metadata),
            self.sequence,
            self.importance,
            consent,
            self.legal_hold,
            self.created_at,
            self.updated_at,
            thread_id,
        )
        return record, list(invalidated)


def _sources(row: _Row) -> list[str]:
    lineage = row.metadata.get("_lineage")
    return list(lineage.get("sourceIds", [])) if isinstance(lineage, dict) else []


_REASONS = ("deleted", "held", "revoked", "corrected", "expired", "source-invalidated")
#: The tombstones of an erasure (forget, retention, legal hold): a grant never clears them (``set_consent_v1``).
ERASURE_REASONS = ("deleted", "expired", "held")


class MemoryVectorStore(EmulatorRagStore):
    """In-memory :class:`prism_memory.stores.VectorStore` and :class:`prism_memory.stores.RagVectorStore` (seed ``createMemoryVectorStore``).

    ``dimensions`` pins the embedding width like ``vector(N)``; unpinned, the
    first entry of a thread (or chunk of a RAG scope) fixes its width. Data
    lives in this object only. Each method first checks its arguments' types
    as the Postgres store does (:mod:`prism_memory.checks`), then mirrors the
    SQL function named in its docstring (its input rules: :mod:`.rules`).
    """

    def __init__(self, dimensions: int | None = None) -> None:
        if dimensions is not None:
            check_int_option("dimensions", dimensions, 1, 16000)
        self.dimensions = dimensions
        self._threads: dict[tuple[str, str, str], dict[str, _Row]] = {}
        #: thread -> entry id -> (reason, sequence of the entry when tombstoned)
        self._tombstones: dict[tuple[str, str, str], dict[str, tuple[str, int | None]]] = {}
        self._grants: dict[tuple[str, str, str, str, str], tuple[frozenset[str], datetime | None]] = {}
        #: thread -> (model id, width) of its embedder, the embedding_model table's rows
        self._models: dict[tuple[str, str, str], tuple[str, int]] = {}
        #: (tenant, resource, thread or '' for the resource) -> maximum age in days
        self._policies: dict[tuple[str, str, str], float] = {}
        self._init_rag()

    @staticmethod
    def _key(scope: Scope) -> tuple[str, str, str]:
        check_scope(scope, thread_required=True)
        return (scope.tenant_id, scope.resource_id, scope.thread_id or "")

    def _expected_dimensions(self, rows: dict[str, _Row]) -> int | None:
        if self.dimensions is not None:
            return self.dimensions
        for row in rows.values():
            return int(row.embedding.shape[0])
        return None

    def _check_dimensions(self, rows: dict[str, _Row], width: int) -> None:
        expected = self._expected_dimensions(rows)
        if expected is not None and width != expected:
            raise DimensionMismatchError(f"embedding has {width} dimensions, expected {expected}")

    def _use_model(
        self, scopes: Sequence[Scope], model: EmbeddingModel | None, switch: bool = False
    ) -> dict[tuple[str, str, str], tuple[str, int]]:
        """Mirror of ``use_embedding_model_v1`` for the threads of ``scopes``: the records the write makes,
        which the caller stores once the write succeeded (they commit with it). ``None``: no guard."""
        if model is None:
            return {}
        keys = sorted({self._key(scope) for scope in scopes}, key=lambda key: (key[1], key[2]))
        wanted = (model.model_id, model.dimensions)
        records = {}
        for key in keys:
            rows = self._threads.get(key, {})
            self._check_dimensions(rows, model.dimensions)
            recorded = self._models.get(key)
            if recorded == wanted:
                continue
            if recorded is not None and recorded[0] != model.model_id and not switch and rows:
                raise EmbeddingModelMismatchError(
                    f"thread {key[2]!r} (resource {key[1]!r}) holds entries embedded with model {recorded[0]!r} "
                    f"({recorded[1]} dimensions), not {model.model_id!r}: run rebuild_index with the new embedder "
                    "to switch the thread's model"
                )
            records[key] = wanted
        return records

    def _check_model(self, scope: Scope, model: EmbeddingModel, parent_thread_id: str | None, now: datetime) -> None:
        """Mirror of ``recall_v3``'s model check (``p_model_id``): another model of the same width recorded by the thread (holding
        entries) or by the parent thread of a live grant to it (holding a granted entry) raises."""
        key = self._key(scope)

        def other_model(where: tuple[str, str, str]) -> str | None:
            recorded = self._models.get(where)
            if recorded is None or recorded[1] != model.dimensions or recorded[0] == model.model_id:
                return None
            return recorded[0]

        recorded = other_model(key)
        if recorded is not None and self._threads.get(key):
            raise EmbeddingModelMismatchError(
                f"thread {key[2]!r} holds entries embedded with model {recorded!r} ({model.dimensions} dimensions), "
                f"not {model.model_id!r}: recall with that model, or rebuild_index the thread with this one"
            )
        if parent_thread_id is None:
            return
        for (tenant, resource, parent, child_resource, child_thread), (ids, expires_at) in sorted(self._grants.items()):
            where = (tenant, resource, parent)
            live = expires_at is None or expires_at > now
            if (tenant, child_resource, child_thread, parent) != (*key, parent_thread_id) or not live:
                continue
            recorded = other_model(where)
            if recorded is not None and ids & self._threads.get(where, {}).keys():
                raise EmbeddingModelMismatchError(
                    f"the parent thread {parent!r} (resource {resource!r}) holds entries embedded with model "
                    f"{recorded!r} ({model.dimensions} dimensions), not {model.model_id!r}"
                )

    async def remember(
        self, scope: Scope, records: Sequence[EntryRecord], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> tuple[int, list[str]]:
        """Mirror of ``use_embedding_model_v1`` (with a ``model``), then of ``remember_v2``: validate, upsert all
        records, re-derive their tombstones, walk from the invalid ones."""
        scope_texts(scope)
        arguments = record_arguments(records)
        now = check_now(now)
        check_model(model, [len(values) for _, values in arguments])
        if not records:
            self._key(scope)  # remember_v2 checks the scope before it returns for no entries
            return 0, []
        models = self._use_model([scope], model)
        checked = self._check_write(scope, records, arguments, now)
        with self._restored_on_error([self._key(scope)]):
            written = await self._write(scope, records, *checked, now)
        self._models.update(models)
        return written

    async def remember_batch(
        self, writes: Sequence[tuple[Scope, Sequence[EntryRecord]]], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> list[tuple[int, list[str]]]:
        """Mirror of ``use_embedding_model_v1`` for every thread with rows (with a ``model``), then of
        ``remember_batch_v2``: each thread checked then written, in (resource, thread) code-point order, so the
        first failure is the one SQL meets; on a failure every thread of the batch is restored."""
        check_batch_writes(writes)
        arguments = {scope: record_arguments(records) for scope, records in writes}  # all types first, as Postgres
        now = check_now(now)
        check_model(model, [len(values) for items in arguments.values() for _, values in items])
        order = sorted((scope for scope, records in writes if records), key=lambda s: (s.resource_id, s.thread_id))
        models = self._use_model(order, model) if order else {}
        by_scope = dict(writes)
        results: dict[Scope, tuple[int, list[str]]] = {}
        with self._restored_on_error([self._key(scope) for scope in order]):
            for scope in order:
                checked = self._check_write(scope, by_scope[scope], arguments[scope], now)
                results[scope] = await self._write(scope, by_scope[scope], *checked, now)
        self._models.update(models)
        return [results.get(scope, (0, [])) for scope, _records in writes]

    def _check_write(
        self, scope: Scope, records: Sequence[EntryRecord], arguments: list[tuple[str, np.ndarray]], now: datetime
    ) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
        """remember_v2's checks, after :func:`record_arguments`, before anything is written: each record's
        stored metadata and float32 embedding."""
        self._key(scope)
        metadata = check_records(records)
        check_expiry_range(records, now)
        vectors = [
            float32(values, f"{entry_label(position, record.id)}: embedding")
            for position, (record, (_, values)) in enumerate(zip(records, arguments), start=1)
        ]
        if len({vector.shape[0] for vector in vectors}) > 1:
            raise DimensionMismatchError("the embeddings in one batch differ in dimensions")
        self._check_dimensions(self._threads.get(self._key(scope), {}), vectors[0].shape[0])
        return metadata, vectors

    @contextlib.contextmanager
    def _restored_on_error(self, keys: Sequence[tuple[str, str, str]]) -> Iterator[None]:
        """All or nothing, as one SQL transaction: on an error, the threads ``keys`` get their rows and tombstones back.

        Writes replace rows rather than change them, so shallow copies suffice.
        """
        saved = [(key, dict(self._threads.get(key, {})), dict(self._tombstones.get(key, {}))) for key in keys]
        grants = dict(self._grants)
        try:
            yield
        except BaseException:
            for key, rows, tombstones in saved:
                self._threads[key], self._tombstones[key] = rows, tombstones
            self._grants = grants
            raise

    async def _write(
        self, scope: Scope, records: Sequence[EntryRecord], metadata: list[dict[str, Any]], vectors: list[np.ndarray],
        now: datetime,
    ) -> tuple[int, list[str]]:
        key = self._key(scope)
        rows = self._threads.setdefault(key, {})
        tombstones = self._tombstones.setdefault(key, {})
        max_sequence = max(
            [0, *(row.sequence for row in rows.values()), *(seq for _, seq in tombstones.values() if seq is not None)]
        )
        written: dict[str, _Row] = {}
        for position, (record, vector, meta) in enumerate(zip(records, vectors, metadata), start=1):
            existing = rows.get(record.id)
            consent = record.consent
            if record.sequence is not None:
                sequence = record.sequence
            elif existing is not None:
                sequence = existing.sequence
            else:
                sequence = max_sequence + position
            written[record.id] = _Row(
                id=record.id,
                text=record.text,
                metadata=meta,
                embedding=vector,
                norm_squared=norm_squared(vector),
                terms=frozenset(lexical_terms(record.text)),
                sequence=sequence,
                importance=None if record.importance is None else min(1.0, max(0.0, float(record.importance))),
                consent_source=consent.source if consent else existing.consent_source if existing else None,
                consent_scope=consent.scope if consent else existing.consent_scope if existing else None,
                consent_visible=consent.visible if consent else existing.consent_visible if existing else True,
                consent_granted_at=as_utc(consent.granted_at) if consent else existing.consent_granted_at if existing else None,
                consent_revoked_at=as_utc(consent.revoked_at) if consent else existing.consent_revoked_at if existing else None,
                legal_hold=existing.legal_hold if existing else False,
                created_at=existing.created_at if existing else now,
                updated_at=now,
                expires_at=(as_utc(record.expires_at) if record.expires_at is not None
                            else now + record.ttl if record.ttl is not None
                            else existing.expires_at if existing else None),
            )
        rows.update(written)
        self._unshare(key, set(written))
        for entry_id in written:
            tombstones.pop(entry_id, None)
        self._tombstone_from_sources(key, list(written))
        invalid = sorted(
            entry_id for entry_id, row in written.items() if not row.injectable(False) or entry_id in tombstones
        )
        dependents: list[str] = []
        for start in range(0, len(invalid), 64):
            dependents += await self.invalidate(scope, invalid[start : start + 64], "source-invalidated", now)
        return len(records), sorted({*invalid, *dependents})

    def _tombstone_from_sources(self, key: tuple[str, str, str], ids: Sequence[str]) -> None:
        """Mirror of ``tombstone_from_sources_v1``: an entry with an invalid lineage source is invalid."""
        rows = self._threads.get(key, {})
        tombstones = self._tombstones.setdefault(key, {})
        doomed = [
            rows[entry_id]
            for entry_id in ids
            if entry_id in rows
            and entry_id not in tombstones
            and any(source != entry_id and self._invalid_source(key, source) for source in _sources(rows[entry_id]))
        ]
        for row in doomed:  # one statement in SQL: decided before any of them lands
            tombstones[row.id] = ("source-invalidated", row.sequence)

    def _invalid_source(self, key: tuple[str, str, str], source: str) -> bool:
        if source in self._tombstones.get(key, {}):
            return True
        row = self._threads.get(key, {}).get(source)
        return row is not None and (not row.consent_visible or row.consent_revoked_at is not None or row.legal_hold)

    def _visible(self, key: tuple[str, str, str], row: _Row, require_consent: bool) -> bool:
        return row.injectable(require_consent) and row.id not in self._tombstones.get(key, {})

    def _cutoff(self, key: tuple[str, str, str], now: datetime) -> datetime | None:
        """Mirror of ``retention_cutoff_v1`` for the thread ``key`` (``None``: no policy covers it)."""
        ages = [self._policies[policy] for policy in ((*key[:2], ""), key) if policy in self._policies]
        return now - timedelta(days=min(ages)) if ages else None

    def _live(self, key: tuple[str, str, str], row: _Row, now: datetime) -> bool:
        """Mirror of ``is_live_v1``: not older than the policies of ``key`` allow, its ``expires_at`` still ahead."""
        cutoff = self._cutoff(key, now)
        return (cutoff is None or row.created_at >= cutoff) and (row.expires_at is None or row.expires_at > now)

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
    ) -> RecallResult:
        """Mirror of ``recall_v3``: own thread, the travelling entries of the resource's other threads
        (``across_threads``; with a ``model``, not those of threads that recorded another model of its width)
        and live grants, the consent and expiry gates, an exact scored scan, the optional composite re-rank of
        the top ``top_k * 4``, adjacency within each hit's thread, and gate counts. With a ``model``, the
        thread and the parent thread of a live grant must not hold another model's entries (``_check_model``)."""
        scope_texts(scope)
        values = embedding_values(query_embedding, "the query embedding")
        check_text(query_text, "the query text", InvalidQueryError)
        if share_from_parent_thread_id is not None:  # the 256-byte cap is Python's: recall_v3 checks blank only
            check_scope_id("share_from_parent_thread_id", share_from_parent_thread_id)
        scoring = check_scoring(scoring)  # scoring_weights_v1 runs first, in recall_v3's declare
        check_bool(explain, "explain", LimitExceededError)
        check_bool(across_threads, "across_threads", LimitExceededError)
        now = check_now(now)
        check_model(model, [len(values)])
        key = self._key(scope)
        check_int_option("top_k", top_k, 1, HARD_CAPS["top_k"])
        check_int_option("message_range", message_range, 0, HARD_CAPS["message_range"])
        if len(query_text.encode("utf-8")) > HARD_CAPS["query_bytes"]:
            raise PayloadTooLargeError("the query text is over the 64 KiB hard cap")
        if not query_text.strip():  # recall_v3: PM008
            raise InvalidQueryError("the query text must not be blank")
        query = float32(values, "the query embedding")
        self._check_dimensions(self._threads.get(key, {}), query.shape[0])
        foreign: set[tuple[str, str, str]] = set()  # threads whose entries another model of this width embedded
        if model is not None:
            self._check_model(scope, model, share_from_parent_thread_id, now)
            foreign = {where for where, (model_id, width) in self._models.items()
                       if width == model.dimensions and model_id != model.model_id}

        granted: dict[tuple[str, str, str], set[str]] = {}
        if share_from_parent_thread_id is not None:
            for (tenant, resource, parent, child_resource, child_thread), (ids, expires_at) in self._grants.items():
                if (tenant, child_resource, child_thread, parent) == (
                    scope.tenant_id, scope.resource_id, scope.thread_id, share_from_parent_thread_id
                ) and (expires_at is None or expires_at > now):
                    granted.setdefault((tenant, resource, parent), set()).update(ids)

        # The resource's other threads (exact ids: never another resource, a derived one included).
        others = [where for where in self._threads if where[:2] == key[:2] and where != key] if across_threads else []

        def in_scope(where: tuple[str, str, str], row: _Row) -> bool:
            if where == key:
                return True
            travels = (across_threads and where[:2] == key[:2] and row.consent_scope in TRAVELLING_SCOPES
                       and where not in foreign)
            return (travels or row.id in granted.get(where, ())) and row.embedding.shape[0] == query.shape[0]

        def allowed(where: tuple[str, str, str], row: _Row) -> bool:
            return in_scope(where, row) and self._visible(where, row, require_consent) and self._live(where, row, now)

        pool = [(where, row) for where in dict.fromkeys([key, *others, *granted])
                for row in self._threads.get(where, {}).values() if allowed(where, row)]
        terms = set(query_terms(query_text))
        query_norm_squared = norm_squared(query)
        query_double = query.astype(np.float64)
        scored = []
        for where, row in pool:
            similarity = cosine_similarity(row.embedding, row.norm_squared, query_double, query_norm_squared)
            lexical = len(terms & row.terms) / len(terms) if terms else 0.0
            base = similarity + LEXICAL_WEIGHT * lexical
            scored.append(((-base, row.sequence, row.id, where[2], where[1]), where, row, similarity, lexical, base))
        scored.sort(key=lambda item: item[0])
        if scoring is None:
            top = [(where, row, similarity, lexical, None, row.importance, base)
                   for (_, where, row, similarity, lexical, base) in scored[:top_k]]
        else:
            w_similarity, w_recency, w_importance = scoring_weights(scoring)
            blended = []
            for _, where, row, similarity, lexical, base in scored[: top_k * CANDIDATE_FACTOR]:
                fresh = None if scoring.half_life_ms is None else recency(now, row.created_at, scoring.half_life_ms)
                weight = importance_used(row.importance)
                score = w_similarity * base + w_recency * (fresh or 0.0) + w_importance * weight
                blended.append(((-score, row.sequence, row.id, where[2], where[1]),
                                (where, row, similarity, lexical, fresh, weight, score)))
            blended.sort(key=lambda item: item[0])
            top = [item for _, item in blended[:top_k]]
        hits = [
            RecallHit(row.id, row.text, copy.deepcopy(row.metadata), row.sequence, score, similarity, lexical,
                      importance, where[2], where[1], fresh)
            for (where, row, similarity, lexical, fresh, importance, score) in top
        ]
        adjacent: list[AdjacentEntry] = []
        if message_range > 0 and top:
            hit_keys = {(where, row.id) for (where, row, *_rest) in top}
            near = {
                (where, other.id): (where, other)
                for (where, row, *_rest) in top
                for other in self._threads.get(where, {}).values()
                if abs(other.sequence - row.sequence) <= message_range
                and (where, other.id) not in hit_keys
                and allowed(where, other)
            }
            ordered = sorted(near.values(), key=lambda item: (item[1].sequence, item[1].id, item[0][2], item[0][1]))
            adjacent = [
                AdjacentEntry(row.id, row.text, copy.deepcopy(row.metadata), row.sequence, row.importance, where[2], where[1])
                for where, row in ordered
            ]
        explanation = None
        if explain:  # the thread's, the other threads' (across) and the granted entries, each at its first gate
            removed: dict[str, int] = {}
            counted = {(where, row.id): (where, row) for where in [key, *others]
                       for row in self._threads.get(where, {}).values()}
            counted.update({(where, row.id): (where, row) for where, ids in granted.items()
                            for row in self._threads.get(where, {}).values() if row.id in ids})
            for where, row in counted.values():
                gate = (
                    "scope" if not in_scope(where, row)
                    else "hold" if row.legal_hold
                    else "consent" if not row.consented(require_consent)
                    else "invalidation" if row.id in self._tombstones.get(where, {})
                    else "expiry" if not self._live(where, row, now)
                    else None
                )
                if gate is not None:
                    removed[gate] = removed.get(gate, 0) + 1
            explanation = explain_hits(hits, scoring, removed)
        return RecallResult(hits, adjacent, explanation)

    async def share_with(
        self,
        scope: Scope,
        child_resource_id: str,
        child_thread_id: str,
        source_ids: Sequence[str],
        expires_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int:
        """Mirror of ``share_with_v1``: grant the child's read of ``source_ids``; no ids revokes."""
        scope_texts(scope)
        scope_texts(Scope(scope.tenant_id, child_resource_id, child_thread_id))
        check_texts(source_ids, "shared ids", InvalidEntryError)
        check_aware(expires_at, "expires_at")
        now = check_now(now)
        key = self._key(scope)
        check_scope(Scope(scope.tenant_id, child_resource_id, child_thread_id), thread_required=True)
        if (child_resource_id, child_thread_id) == (scope.resource_id, scope.thread_id):
            raise InvalidEntryError("a thread cannot share with itself")
        if child_resource_id != scope.resource_id and not is_agent_resource(scope.resource_id, child_resource_id):
            raise InvalidScopeError(
                "child_resource_id must be the parent's resource or a delegated agent's (<resource>/agent:<agent id>)"
            )
        if len(source_ids) > 256:
            raise LimitExceededError(f"a share grant lists at most 256 ids, got {len(source_ids)}")
        check_shared_ids(source_ids)
        if expires_at is not None and expires_at <= now:
            raise LimitExceededError("expires_at must be in the future")
        grant_key = (scope.tenant_id, scope.resource_id, scope.thread_id or "", child_resource_id, child_thread_id)
        granted = frozenset(source_ids) & self._threads.get(key, {}).keys()  # the entries as they are now
        if not granted:
            self._grants.pop(grant_key, None)
            return 0
        self._grants[grant_key] = (granted, expires_at)
        return len(granted)

    def _walk(self, key: tuple[str, str, str], ids: Sequence[str]) -> set[str]:
        """Mirror of invalidate_v1's walk: breadth-first over distinct lineage edges; returns every id reached."""
        rows = self._threads.get(key, {})
        dependents: dict[str, set[str]] = {}
        for row in rows.values():
            for source in _sources(row):
                if source != row.id:
                    dependents.setdefault(source, set()).add(row.id)
        visited = set(ids)
        frontier = set(ids)
        edges: set[tuple[str, str]] = set()
        depth = 0
        while frontier:
            depth += 1
            found = {(source, dependent) for source in frontier for dependent in dependents.get(source, ())}
            edges |= found
            if len(edges) > 256:
                raise LineageLimitError("lineage walk passed the cap of 256 edges")
            new = {dependent for _, dependent in found} - visited
            if new and depth > 8:
                raise LineageLimitError("lineage walk passed the cap of depth 8")
            visited |= new
            frontier = new
        return visited

    async def invalidate(self, scope: Scope, ids: Sequence[str], reason: str, now: datetime | None = None) -> list[str]:
        """Mirror of ``invalidate_v1``: tombstones (self unless corrected, and dependents), legal hold for 'held'."""
        scope_texts(scope)
        ids = check_texts(ids, "ids", InvalidEntryError)
        check_text(reason, "reason", InvalidEntryError)
        now = check_now(now)
        key = self._key(scope)
        if not 1 <= len(ids) <= 64:
            raise LimitExceededError(f"invalidate: between 1 and 64 ids per call, got {len(ids)}")
        if reason not in _REASONS:
            raise InvalidEntryError(f"invalidate: unknown reason {reason!r}")
        rows = self._threads.get(key, {})
        reached = [
            entry_id
            for entry_id in sorted(self._walk(key, ids))
            if entry_id in rows and not (reason == "corrected" and entry_id in ids)
        ]
        tombstones = self._tombstones.setdefault(key, {})
        for entry_id in reached:
            kept = tombstones.setdefault(entry_id, (reason, rows[entry_id].sequence))
            if reason in ERASURE_REASONS and kept[0] not in ERASURE_REASONS:  # an erasure's reason replaces another's
                tombstones[entry_id] = (reason, kept[1])
        if reason == "held":
            for entry_id in ids:
                if entry_id in rows:
                    rows[entry_id].legal_hold = True
                    rows[entry_id].updated_at = now
        return reached

    async def purge(self, scope: Scope, ids: Sequence[str]) -> int:
        """Mirror of ``purge_v1``: delete tombstoned, unheld bodies; an untombstoned one raises first."""
        scope_texts(scope)
        ids = check_texts(ids, "ids", InvalidEntryError)
        key = self._key(scope)
        if not 1 <= len(ids) <= 64:
            raise LimitExceededError(f"purge: between 1 and 64 ids per call, got {len(ids)}")
        rows = self._threads.get(key, {})
        tombstones = self._tombstones.get(key, {})
        doomed = {entry_id for entry_id in ids if entry_id in rows and not rows[entry_id].legal_hold}
        if any(entry_id not in tombstones for entry_id in doomed):
            raise LifecycleOrderError("purge: invalidate the entries (invalidate_v1) before deleting them")
        for entry_id in doomed:
            del rows[entry_id]
        self._unshare(key, doomed)
        return len(doomed)

    def _unshare(self, key: tuple[str, str, str], ids: set[str]) -> None:
        """Mirror of ``unshare_v1``: written or deleted ids leave every grant of their thread."""
        for grant_key, (shared, expires_at) in list(self._grants.items()):
            if grant_key[:3] == key and shared & ids:
                self._grants[grant_key] = (shared - ids, expires_at)

    def _locked_row(self, key: tuple[str, str, str], entry_id: str) -> _Row:
        row = self._threads.get(key, {}).get(entry_id)
        if row is None:
            raise EntryNotFoundError(f"no entry {entry_id} in this thread")
        return row

    async def set_consent(
        self, scope: Scope, entry_id: str, change: ConsentChange, now: datetime | None = None
    ) -> tuple[MemoryRecord, list[str]]:
        """Mirror of ``set_consent_v1``: revoke writes tombstones first; grant clears the entry's own."""
        scope_texts(scope)
        check_text(entry_id, "entry_id", InvalidEntryError)
        change = consent_change_arguments(change)
        now = check_now(now)
        key = self._key(scope)
        check_consent_change(change)
        row = self._locked_row(key, entry_id)
        revoking = change.visible is False or change.revoked_at is not None
        granting = change.visible is True and change.revoked_at is None
        invalidated: list[str] = []
        if revoking:
            invalidated = await self.invalidate(scope, [entry_id], "revoked", now)
        elif granting:
            tombstones = self._tombstones.get(key, {})
            if entry_id in tombstones and tombstones[entry_id][0] not in ERASURE_REASONS:
                del tombstones[entry_id]  # never an erasure's: its deletes may follow
        row.consent_source = change.source or row.consent_source or "user"
        row.consent_scope = change.scope or row.consent_scope or "thread"
        row.consent_visible = False if revoking else row.consent_visible if change.visible is None else change.visible
        if granting:
            row.consent_granted_at = change.granted_at or now
            row.consent_revoked_at = None
        else:
            row.consent_granted_at = change.granted_at or row.consent_granted_at
            if revoking:
                row.consent_revoked_at = change.revoked_at or now
        row.updated_at = now
        if granting:
            self._tombstone_from_sources(key, [entry_id])
        return row.record(invalidated)

    async def correct(
        self, scope: Scope, entry_id: str, text: str, embedding: Sequence[float], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> tuple[MemoryRecord, list[str]]:
        """Mirror of ``use_embedding_model_v1`` (with a ``model``), then of ``correct_v2``: invalidate dependents,
        replace text and embedding, mark the lineage corrected, then re-derive the entry from its sources."""
        scope_texts(scope)
        values = correction_arguments(entry_id, text, embedding)
        now = check_now(now)
        check_model(model, [len(values)])
        models = self._use_model([scope], model)
        key = self._key(scope)
        if not text.strip():
            raise InvalidEntryError("the corrected text must not be blank")
        vector = float32(values, "the corrected embedding")
        rows = self._threads.get(key, {})
        self._check_dimensions(rows, vector.shape[0])
        row = self._locked_row(key, entry_id)
        invalidated = await self.invalidate(scope, [entry_id], "corrected", now)
        row.text = text
        row.terms = frozenset(lexical_terms(text))
        row.embedding = vector
        row.norm_squared = norm_squared(vector)
        lineage = row.metadata.get("_lineage")
        row.metadata["_lineage"] = {**(lineage if isinstance(lineage, dict) else {"sourceIds": []}), "reason": "corrected"}
        row.updated_at = now
        self._unshare(key, {entry_id})
        if entry_id not in self._tombstones.get(key, {}):  # re-derived from its own sources (lineage cycles)
            self._tombstone_from_sources(key, [entry_id])
            if entry_id in self._tombstones.get(key, {}):
                invalidated = [*invalidated, entry_id]
        self._models.update(models)
        return row.record(invalidated)

    async def retention_candidates(
        self,
        scope: Scope,
        max_age_days: float | None,
        max_entries: int | None,
        batch_size: int,
        now: datetime | None = None,
    ) -> list[tuple[str, bool]]:
        """Mirror of ``retention_candidates_v2``: oldest expired entries (by expiry, the stored policies,
        ``max_age_days`` or ``max_entries``) until ``batch_size`` unheld ones."""
        scope_texts(scope)
        max_age_days = retention_arguments(max_age_days, max_entries, batch_size)
        now = check_now(now)  # in UTC: 24-hour days, whatever the clock's time zone
        key = self._key(scope)
        check_int_option("batch_size", batch_size, 1, 64)
        if (max_age_days is not None and not 0 <= max_age_days <= 36500) or (max_entries is not None and max_entries < 0):
            raise LimitExceededError("max_age_days must be within 0..36500 and max_entries >= 0")
        rows = sorted(self._threads.get(key, {}).values(), key=lambda row: (row.sequence, row.id))
        newest_rank = {row.id: rank for rank, row in enumerate(reversed(rows), start=1)}
        cutoff = now - timedelta(days=max_age_days) if max_age_days is not None else None
        chosen: list[tuple[str, bool]] = []
        deletable = 0
        for row in rows:
            expired = not self._live(key, row, now) or (cutoff is not None and row.created_at < cutoff) or (
                max_entries is not None and newest_rank[row.id] > max_entries
            )
            if not expired:
                continue
            deletable += 0 if row.legal_hold else 1
            if deletable > batch_size:
                break
            chosen.append((row.id, row.legal_hold))
        return chosen

    async def list_by_thread(
        self, scope: Scope, after: tuple[int, str] | None, limit: int, exportable: bool = False,
        now: datetime | None = None,
    ) -> list[MemoryRecord]:
        """Mirror of ``list_entries_v2``: entries after the (sequence, id) cursor, at most ``limit`` (1..200)."""
        scope_texts(scope)
        after = page_arguments(after, limit, exportable)
        now = check_now(now)
        key = self._key(scope)
        check_int_option("limit", limit, 1, 200)
        rows = sorted(self._threads.get(key, {}).values(), key=lambda row: (row.sequence, row.id))
        chosen = [
            row
            for row in rows
            if (after is None or (row.sequence, row.id) > after)
            and (not exportable or (self._visible(key, row, True) and self._live(key, row, now)))
        ]
        return [row.record()[0] for row in chosen[:limit]]

    async def count_by_thread(self, scope: Scope) -> int:
        """Mirror of ``count_entries_v1``."""
        scope_texts(scope)
        return len(self._threads.get(self._key(scope), {}))

    def _resource_rows(
        self, scope: Scope, after: tuple[str, int, str] | None
    ) -> list[tuple[tuple[str, str, str], _Row]]:
        """The rows of every thread of ``scope``'s tenant and resource after the cursor, in (thread, sequence, id)
        order, after the checks of ``assert_scope_v1`` (tenant and resource only) and ``assert_resource_cursor_v1``."""
        check_scope(Scope(scope.tenant_id, scope.resource_id), thread_required=False)
        if after is not None and (not after[0].strip() or not after[2].strip()):
            raise LimitExceededError("a resource cursor is (thread_id, sequence, id), all given or none")
        threads = sorted(key for key in self._threads if key[:2] == (scope.tenant_id, scope.resource_id))
        return [(key, row) for key in threads
                for row in sorted(self._threads[key].values(), key=lambda row: (row.sequence, row.id))
                if after is None or (key[2], row.sequence, row.id) > after]

    async def list_by_resource(
        self, scope: Scope, after: tuple[str, int, str] | None, limit: int, exportable: bool = False,
        now: datetime | None = None,
    ) -> list[MemoryRecord]:
        """Mirror of ``list_resource_entries_v1``: the resource's entries after the (thread, sequence, id) cursor."""
        scope_texts(scope)
        after = resource_cursor_arguments(after)
        check_int(limit, "limit", LimitExceededError, bits=32)
        check_bool(exportable, "exportable", LimitExceededError)
        now = check_now(now)
        rows = self._resource_rows(scope, after)
        check_int_option("limit", limit, 1, 200)
        chosen = [row.record(thread_id=key[2])[0] for key, row in rows
                  if not exportable or (self._visible(key, row, True) and self._live(key, row, now))]
        return chosen[:limit]

    async def count_by_resource(self, scope: Scope) -> int:
        """Mirror of ``count_resource_entries_v1``."""
        scope_texts(scope)
        check_scope(Scope(scope.tenant_id, scope.resource_id), thread_required=False)
        return sum(len(rows) for key, rows in self._threads.items() if key[:2] == (scope.tenant_id, scope.resource_id))

    async def invalidate_resource(
        self, scope: Scope, after: tuple[str, int, str] | None, limit: int, expired_only: bool = False,
        now: datetime | None = None,
    ) -> list[tuple[str, str, int, bool, bool]]:
        """Mirror of ``invalidate_resource_v1``: the next batch (of expired entries, ``expired_only``) tombstoned
        thread by thread (``invalidate``, reason 'deleted' or 'expired', held entries skipped), all or nothing."""
        scope_texts(scope)
        after = resource_cursor_arguments(after)
        check_int(limit, "limit", LimitExceededError, bits=32)
        check_bool(expired_only, "expired_only", LimitExceededError)
        now = check_now(now)
        rows = self._resource_rows(scope, after)
        check_int_option("limit", limit, 1, 64)
        picked = [(key, row) for key, row in rows if not expired_only or not self._live(key, row, now)][:limit]
        by_thread: dict[tuple[str, str, str], list[str]] = {}
        for key, row in picked:
            if not row.legal_hold:
                by_thread.setdefault(key, []).append(row.id)
        reached: list[tuple[tuple[str, str, str], str]] = []
        with self._restored_on_error(list(by_thread)):
            for key in sorted(by_thread):
                thread = Scope(*key)
                reason = "expired" if expired_only else "deleted"
                reached += [(key, entry_id) for entry_id in await self.invalidate(thread, by_thread[key], reason, now)]
        result = [(key[2], row.id, row.sequence, row.legal_hold, True) for key, row in picked]
        seen = {(key, row.id) for key, row in picked}
        others = sorted({(key, entry_id) for key, entry_id in reached if (key, entry_id) not in seen},
                        key=lambda item: (item[0][2], self._threads[item[0]][item[1]].sequence, item[1]))
        return result + [(key[2], entry_id, self._threads[key][entry_id].sequence,
                          self._threads[key][entry_id].legal_hold, False) for key, entry_id in others]

    async def purge_resource(self, scope: Scope, entries: Sequence[tuple[str, str]]) -> int:
        """Mirror of ``purge_resource_v1``: ``purge`` thread by thread (in code-point order), all or nothing."""
        scope_texts(scope)
        threads, ids = resource_entry_arguments(entries)
        check_scope(Scope(scope.tenant_id, scope.resource_id), thread_required=False)
        if not 1 <= len(ids) <= 64:
            raise LimitExceededError(f"purge_resource: between 1 and 64 (thread, id) pairs per call, got {len(ids)}")
        by_thread: dict[str, list[str]] = {}
        for thread_id, entry_id in zip(threads, ids):
            by_thread.setdefault(thread_id, []).append(entry_id)
        keys = [(scope.tenant_id, scope.resource_id, thread_id) for thread_id in by_thread]
        deleted = 0
        with self._restored_on_error(keys):
            for thread_id in sorted(by_thread):
                deleted += await self.purge(Scope(scope.tenant_id, scope.resource_id, thread_id), by_thread[thread_id])
        return deleted

    async def set_retention_policy(
        self, scope: Scope, max_age_days: float | None, now: datetime | None = None
    ) -> float | None:
        """Mirror of ``set_retention_policy_v1``: the thread's policy, or the resource's when the scope has no thread."""
        scope_texts(scope)
        max_age_days = real_number(max_age_days, "max_age_days", LimitExceededError)
        check_now(now)
        check_scope(scope, thread_required=False)
        if max_age_days is not None and not 0 <= max_age_days <= 36500:
            raise LimitExceededError(f"max_age_days must be a number from 0 to 36500, got {max_age_days!r}")
        key = (scope.tenant_id, scope.resource_id, scope.thread_id or "")
        if max_age_days is None:
            self._policies.pop(key, None)
        else:
            self._policies[key] = max_age_days
        return max_age_days

    async def get_retention_policy(self, scope: Scope) -> RetentionPolicy:
        """Mirror of ``get_retention_policy_v1``."""
        scope_texts(scope)
        check_scope(scope, thread_required=False)
        return RetentionPolicy(self._policies.get((scope.tenant_id, scope.resource_id, "")),
                               None if scope.thread_id is None
                               else self._policies.get((scope.tenant_id, scope.resource_id, scope.thread_id)))

    async def reembed(
        self, scope: Scope, ids: Sequence[str], texts: Sequence[str], embeddings: Sequence[Sequence[float]],
        model: EmbeddingModel | None = None,
    ) -> int:
        """Mirror of ``use_embedding_model_v1`` switching the thread to ``model`` (when given, with embeddings),
        then of ``reembed_v1``: new embeddings for entries whose text is still ``texts``; nothing else changes."""
        scope_texts(scope)
        values = reembed_arguments(ids, texts, embeddings)
        check_model(model, [len(vector) for vector in values])
        models = self._use_model([scope], model, switch=True) if values else {}
        key = self._key(scope)
        if len(ids) != len(embeddings) or len(ids) != len(texts) or len(ids) > 128:
            raise LimitExceededError("reembed: ids, texts and embeddings must pair up, at most 128")
        vectors = [float32(vector, label) for vector, label in zip(values, embedding_labels(ids))]
        rows = self._threads.get(key, {})
        for vector in vectors:
            self._check_dimensions(rows, vector.shape[0])
        updated = 0
        for entry_id, text, vector in zip(ids, texts, vectors):
            if entry_id in rows and rows[entry_id].text == text:
                rows[entry_id].embedding = vector
                rows[entry_id].norm_squared = norm_squared(vector)
                updated += 1
        self._models.update(models)
        return updated

    async def close(self) -> None:
        """Nothing to release; kept for the store contract."""


class MemoryWorkingStore:
    """In-memory :class:`prism_memory.stores.WorkingStore` (seed ``createMemoryWorkingStore``)."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str, str], WorkingMemoryRecord] = {}

    async def get_working(self, scope: Scope) -> WorkingMemoryRecord | None:
        """Mirror of ``get_working_v1``, after a round trip (:func:`_round_trip`)."""
        check_scope(scope, thread_required=False)
        await _round_trip()
        record = self._records.get((scope.tenant_id, scope.resource_id, scope.thread_id or ""))
        return None if record is None else copy.deepcopy(record)

    async def update_working(
        self, scope: Scope, data: dict[str, Any], expected_version: int | None
    ) -> WorkingMemoryRecord:
        """Mirror of ``update_working_v1`` after a round trip (:func:`_round_trip`): version + 1, or
        :class:`WorkingMemoryVersionConflict`."""
        check_scope(scope, thread_required=False)
        document = json_document(data, "working memory", WorkingMemoryValidationError)
        if len(document.encode("utf-8")) > STORE_WORKING_MEMORY_BYTES:
            raise PayloadTooLargeError("working memory is over the 8 MiB hard cap of the store")
        if expected_version is not None and check_int(expected_version, "expected_version", LimitExceededError) < 0:
            raise LimitExceededError(f"expected_version must be >= 0, got {expected_version}")
        await _round_trip()
        key = (scope.tenant_id, scope.resource_id, scope.thread_id or "")
        current = self._records.get(key)
        current_version = current.version if current else 0
        if expected_version is not None and expected_version != current_version:
            raise WorkingMemoryVersionConflict(
                f"working memory is at version {current_version}, expected {expected_version}"
            )
        now = _now()
        record = WorkingMemoryRecord(
            tenant_id=scope.tenant_id,
            resource_id=scope.resource_id,
            thread_id=scope.thread_id,
            data=load_json(document),
            version=current_version + 1,
            created_at=current.created_at if current else now,
            updated_at=now,
        )
        self._records[key] = record
        return copy.deepcopy(record)

    async def close(self) -> None:
        """Nothing to release; kept for the store contract."""


def create_memory_vector_store(dimensions: int | None = None) -> MemoryVectorStore:
    """Create the in-memory vector store: the default when ``create_memory`` gets none, and the emulator's
    RAG store (seed ``createMemoryVectorStore``). ``dimensions`` pins every embedding's width (1..16,000)."""
    return MemoryVectorStore(dimensions)


def create_memory_working_store() -> MemoryWorkingStore:
    """Create the in-memory working store (the default when ``create_memory`` gets none)."""
    return MemoryWorkingStore()
