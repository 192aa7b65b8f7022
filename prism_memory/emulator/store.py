"""Pure-Python stores that implement the SQL functions' rules.

* similarity follows pgvector's cosine: ``dot / sqrt(|a|^2 * |b|^2)`` clamped
  to [-1, 1], then ``1 - (1 - s)``, over the float32 values pgvector stores.
  pgvector sums the products in float32, the emulator in float64: the two are
  bit-identical whenever the products are exact in float32 (the hash
  embedder's small integers), and otherwise agree to about 1e-7, so entries
  whose scores differ by less than that may swap places;
* lexical uses :func:`prism_memory.lexical.lexical_terms`, the mirror of
  ``lexical_terms_v1``;
* ties break on sequence, then id in code-point order (``collate "C"``);
* metadata and working memory are stored as their JSON, like ``jsonb``.

Every operation runs without awaiting in between, so it is atomic under asyncio.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from ..embedding import assert_finite_vector
from ..errors import (
    DimensionMismatchError,
    LimitExceededError,
    PayloadTooLargeError,
    WorkingMemoryValidationError,
    WorkingMemoryVersionConflict,
)
from ..lexical import lexical_terms
from ..scoring import LEXICAL_WEIGHT
from ..types import HARD_CAPS, AdjacentEntry, EntryRecord, RecallHit, RecallResult, Scope, WorkingMemoryRecord, check_int_option
from ..validation import STORE_WORKING_MEMORY_BYTES, check_records, check_scope, json_document


def _now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(slots=True)
class _Row:
    id: str
    text: str
    metadata: dict[str, Any]
    embedding: np.ndarray  # float32, as pgvector stores it
    norm_squared: float
    terms: frozenset[str]
    sequence: int
    importance: float | None
    created_at: datetime
    updated_at: datetime


def _float32(values: Sequence[float], label: str) -> np.ndarray:
    """The embedding as pgvector stores it (float32), after the same checks as ``assert_embedding_v1``."""
    return np.asarray(assert_finite_vector(values, label), dtype=np.float32)


def _norm_squared(vector: np.ndarray) -> float:
    as_double = vector.astype(np.float64)
    return float(np.dot(as_double, as_double))


class MemoryVectorStore:
    """In-memory :class:`prism_memory.stores.VectorStore` (seed ``createMemoryVectorStore``).

    ``dimensions`` pins the embedding width like ``vector(N)``; unpinned, the
    first entry of a thread fixes its width. Data lives in this object only.
    """

    def __init__(self, dimensions: int | None = None) -> None:
        if dimensions is not None:
            check_int_option("dimensions", dimensions, 1, 16000)
        self.dimensions = dimensions
        self._threads: dict[tuple[str, str, str], dict[str, _Row]] = {}

    def _thread(self, scope: Scope) -> dict[str, _Row]:
        return self._threads.get((scope.tenant_id, scope.resource_id, scope.thread_id or ""), {})

    def _expected_dimensions(self, rows: dict[str, _Row]) -> int | None:
        if self.dimensions is not None:
            return self.dimensions
        for row in rows.values():
            return int(row.embedding.shape[0])
        return None

    async def remember(self, scope: Scope, records: Sequence[EntryRecord]) -> int:
        """Mirror of ``remember_v1``: validate everything, then upsert all records."""
        check_scope(scope, thread_required=True)
        if not records:
            return 0
        metadata = check_records(records)
        vectors = [_float32(record.embedding, f"embedding of entry {record.id!r}") for record in records]
        if len({vector.shape[0] for vector in vectors}) > 1:
            raise DimensionMismatchError("the embeddings in one batch differ in dimensions")
        rows = self._thread(scope)
        expected = self._expected_dimensions(rows)
        if expected is not None and vectors[0].shape[0] != expected:
            raise DimensionMismatchError(f"embedding has {vectors[0].shape[0]} dimensions, expected {expected}")

        max_sequence = max((row.sequence for row in rows.values()), default=0)
        now = _now()
        updated = dict(rows)
        for position, (record, vector, meta) in enumerate(zip(records, vectors, metadata), start=1):
            existing = rows.get(record.id)
            if record.sequence is not None:
                sequence = record.sequence
            elif existing is not None:
                sequence = existing.sequence
            else:
                sequence = max_sequence + position
            importance = None if record.importance is None else min(1.0, max(0.0, float(record.importance)))
            updated[record.id] = _Row(
                id=record.id,
                text=record.text,
                metadata=meta,
                embedding=vector,
                norm_squared=_norm_squared(vector),
                terms=frozenset(lexical_terms(record.text)),
                sequence=sequence,
                importance=importance,
                created_at=existing.created_at if existing else now,
                updated_at=now,
            )
        self._threads[(scope.tenant_id, scope.resource_id, scope.thread_id or "")] = updated
        return len(records)

    async def recall(
        self, scope: Scope, query_embedding: Sequence[float], query_text: str, top_k: int, message_range: int
    ) -> RecallResult:
        """Mirror of ``recall_v1``: exact scored scan of the thread, then adjacency."""
        check_scope(scope, thread_required=True)
        check_int_option("top_k", top_k, 1, HARD_CAPS["top_k"])
        check_int_option("message_range", message_range, 0, HARD_CAPS["message_range"])
        query = _float32(query_embedding, "query embedding")
        rows = self._thread(scope)
        expected = self._expected_dimensions(rows)
        if expected is not None and query.shape[0] != expected:
            raise DimensionMismatchError(f"embedding has {query.shape[0]} dimensions, expected {expected}")

        query_terms = set(lexical_terms(query_text or ""))
        query_norm_squared = _norm_squared(query)
        query_double = query.astype(np.float64)
        scored = []
        for row in rows.values():
            dot = float(np.dot(row.embedding.astype(np.float64), query_double))
            cosine = dot / math.sqrt(row.norm_squared * query_norm_squared)
            cosine = 1.0 if cosine > 1 else -1.0 if cosine < -1 else cosine
            similarity = 1.0 - (1.0 - cosine)
            lexical = len(query_terms & row.terms) / len(query_terms) if query_terms else 0.0
            score = similarity + LEXICAL_WEIGHT * lexical
            scored.append((-score, row.sequence, row.id, row, similarity, lexical, score))
        scored.sort(key=lambda item: item[:3])
        top = scored[:top_k]
        hits = [
            RecallHit(row.id, row.text, copy.deepcopy(row.metadata), row.sequence, score, similarity, lexical, row.importance)
            for (_, _, _, row, similarity, lexical, score) in top
        ]
        adjacent: list[AdjacentEntry] = []
        if message_range > 0 and hits:
            hit_ids = {hit.id for hit in hits}
            windows = [(hit.sequence - message_range, hit.sequence + message_range) for hit in hits]
            near = [
                row
                for row in rows.values()
                if row.id not in hit_ids and any(low <= row.sequence <= high for low, high in windows)
            ]
            near.sort(key=lambda row: (row.sequence, row.id))
            adjacent = [AdjacentEntry(row.id, row.text, copy.deepcopy(row.metadata), row.sequence, row.importance) for row in near]
        return RecallResult(hits, adjacent)

    async def close(self) -> None:
        """Nothing to release; kept for the store contract."""


class MemoryWorkingStore:
    """In-memory :class:`prism_memory.stores.WorkingStore` (seed ``createMemoryWorkingStore``)."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str, str], WorkingMemoryRecord] = {}

    async def get_working(self, scope: Scope) -> WorkingMemoryRecord | None:
        """Mirror of ``get_working_v1``."""
        check_scope(scope, thread_required=False)
        record = self._records.get((scope.tenant_id, scope.resource_id, scope.thread_id or ""))
        return None if record is None else copy.deepcopy(record)

    async def update_working(
        self, scope: Scope, data: dict[str, Any], expected_version: int | None
    ) -> WorkingMemoryRecord:
        """Mirror of ``update_working_v1``: version + 1, or :class:`WorkingMemoryVersionConflict`."""
        check_scope(scope, thread_required=False)
        document = json_document(data, "working memory", WorkingMemoryValidationError)
        if len(document.encode("utf-8")) > STORE_WORKING_MEMORY_BYTES:
            raise PayloadTooLargeError("working memory is over the 8 MiB hard cap of the store")
        if expected_version is not None and expected_version < 0:
            raise LimitExceededError(f"expected_version must be >= 0, got {expected_version}")
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
            data=json.loads(document),
            version=current_version + 1,
            created_at=current.created_at if current else now,
            updated_at=now,
        )
        self._records[key] = record
        return copy.deepcopy(record)

    async def close(self) -> None:
        """Nothing to release; kept for the store contract."""


def create_memory_vector_store(dimensions: int | None = None) -> MemoryVectorStore:
    """Create the in-memory vector store (the default when ``create_memory`` gets none)."""
    return MemoryVectorStore(dimensions)


def create_memory_working_store() -> MemoryWorkingStore:
    """Create the in-memory working store (the default when ``create_memory`` gets none)."""
    return MemoryWorkingStore()
