"""The store contracts both backends implement.

Each method is one atomic operation: it either applies completely or raises
and changes nothing. The Postgres adapter implements each as one call to a
versioned SQL function; the emulator implements the same rules in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from .scoring import LEXICAL_WEIGHT
from .types import (
    ConsentChange,
    EmbeddingModel,
    EntryRecord,
    MemoryRecord,
    RagAccessConstraint,
    RagChunk,
    RagMatch,
    RecallResult,
    RecallScoringOptions,
    RecallSelection,
    RetentionPolicy,
    Scope,
    StoredChunk,
    WorkingMemoryRecord,
)


@runtime_checkable
class VectorStore(Protocol):
    """Semantic-memory entries of threads: scoped recall behind the consent gate, and their lifecycle.

    Each method is one SQL function on Postgres (named in brackets). ``now``
    stamps writes (the store's clock when ``None``).

    ``model`` (an :class:`EmbeddingModel`, or ``None`` for an embedder without an identity, which keeps
    the width rule alone) is the embedding-model guard: a write's embeddings, or a recall's query
    embedding, come from that model. The thread's recorded model is checked in the same transaction as
    the write (``use_embedding_model_v1``) or in the recall's own call (``recall_v4``'s ``p_model_id``), and
    another model of the same width raises :class:`~prism_memory.errors.EmbeddingModelMismatchError`, nothing changed;
    ``reembed`` switches the thread's record to ``model`` instead (``rebuild_index``).
    """

    async def remember(
        self, scope: Scope, records: Sequence[EntryRecord], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> tuple[int, list[str]]:
        """[remember_v3] Upsert ``records`` into ``scope``'s thread, all or nothing.

        Returns how many were written and the ids invalidated by the write
        (written entries that are invalid, and their lineage dependents).
        """
        ...

    async def remember_batch(
        self, writes: Sequence[tuple[Scope, Sequence[EntryRecord]]], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> list[tuple[int, list[str]]]:
        """[remember_batch_v3] Bulk ingest: ``remember`` for many threads of one tenant, all or nothing.

        ``writes`` pairs each thread's scope with its records; every scope
        names the same tenant and a thread, and no thread appears twice
        (:class:`InvalidScopeError` otherwise, before anything is written).
        Returns ``(written, invalidated)`` per item of ``writes``, in its order.
        """
        ...

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
        """[recall_v4] Top-``top_k`` injectable hits of the thread (and of live grants; with ``across_threads``
        also of the resource's other threads, the entries whose consent scope lets them leave their thread) among
        those ``selection`` keeps, by the default score (``similarity + lexical_weight * lexical``), or re-ranked
        by ``scoring``, plus adjacent entries from each hit's thread (kept by ``selection`` too); with
        ``explain``, the hits' components and gate counts."""
        ...

    async def share_with(
        self,
        scope: Scope,
        child_resource_id: str,
        child_thread_id: str,
        source_ids: Sequence[str],
        expires_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int:
        """[share_with_v1] Grant (no ids: revoke) a child thread's read of ``source_ids`` of ``scope``'s thread."""
        ...

    async def invalidate(self, scope: Scope, ids: Sequence[str], reason: str, now: datetime | None = None) -> list[str]:
        """[invalidate_v1] Tombstone ``ids`` (1..64) and their lineage dependents; return every invalidated id."""
        ...

    async def purge(self, scope: Scope, ids: Sequence[str]) -> int:
        """[purge_v1] Delete the tombstoned, unheld bodies of ``ids``; return how many were deleted."""
        ...

    async def erase_walk(
        self, scope: Scope, ids: Sequence[str], reason: str, now: datetime | None = None
    ) -> tuple[list[str], int]:
        """[erase_walk_v1] Tombstone ``ids`` (0..64) with an erasure's ``reason`` (deleted, expired, held) and walk a
        bounded part of their lineage dependents, continuing the thread's pending walks; never refuses. Return the
        ids tombstoned or reached and how many walks stay pending in the thread (call again with no ids until 0)."""
        ...

    async def purge_tombstoned(self, scope: Scope, ids: Sequence[str]) -> tuple[int, list[str]]:
        """[purge_v2] Delete the tombstoned, unheld bodies of ``ids`` (1..64); return how many were deleted and the
        ids kept because a write stored them again after their tombstone (code-point order)."""
        ...

    async def set_consent(
        self, scope: Scope, entry_id: str, change: ConsentChange, now: datetime | None = None
    ) -> tuple[MemoryRecord, list[str]]:
        """[set_consent_v1] Apply ``change``; return the record and the ids invalidated."""
        ...

    async def correct(
        self, scope: Scope, entry_id: str, text: str, embedding: Sequence[float], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> tuple[MemoryRecord, list[str]]:
        """[correct_v2] Replace text and embedding; return the record and the ids invalidated (dependents, and the
        entry itself when one of its own sources was among them)."""
        ...

    async def retention_candidates(
        self, scope: Scope, max_age_days: float | None, max_entries: int | None, batch_size: int, now: datetime | None = None
    ) -> list[tuple[str, bool]]:
        """[retention_candidates_v2] The next sweep's ``(entry_id, held)`` pairs, oldest first: what has expired at
        ``now`` (its ``expires_at``, the stored policies), and what ``max_age_days`` or ``max_entries`` (each
        optional) name."""
        ...

    async def list_by_thread(
        self, scope: Scope, after: tuple[int, str] | None, limit: int, exportable: bool = False,
        now: datetime | None = None, selection: RecallSelection | None = None,
    ) -> list[MemoryRecord]:
        """[list_entries_v3] At most ``limit`` (1..200) entries ``selection`` keeps after the (sequence, id) cursor;
        ``exportable``: only what an export may hold at ``now`` (nothing expired)."""
        ...

    async def count_by_thread(self, scope: Scope) -> int:
        """[count_entries_v1] How many entries the thread holds."""
        ...

    async def list_by_resource(
        self, scope: Scope, after: tuple[str, int, str] | None, limit: int, exportable: bool = False,
        now: datetime | None = None, selection: RecallSelection | None = None,
    ) -> list[MemoryRecord]:
        """[list_resource_entries_v2] At most ``limit`` (1..200) entries ``selection`` keeps of every thread of
        ``scope``'s tenant and resource (its thread is ignored) after the (thread_id, sequence, id) cursor, each
        naming its thread."""
        ...

    async def count_by_resource(self, scope: Scope) -> int:
        """[count_resource_entries_v1] How many entries every thread of ``scope``'s tenant and resource holds."""
        ...

    async def invalidate_resource(
        self, scope: Scope, after: tuple[str, int, str] | None, limit: int, expired_only: bool = False,
        now: datetime | None = None,
    ) -> list[tuple[str, str, int, bool, bool]]:
        """[invalidate_resource_v1] Tombstone the next ``limit`` (1..64) unheld entries of the resource after the
        cursor (with ``expired_only``, of those expired at ``now``) and their lineage dependents;
        ``(thread_id, entry_id, sequence, held, picked)`` rows, the batch (``picked``) first in cursor order,
        then the dependents reached besides it."""
        ...

    async def purge_resource(self, scope: Scope, entries: Sequence[tuple[str, str]]) -> int:
        """[purge_resource_v1] Delete the tombstoned, unheld bodies of 1..64 ``(thread_id, entry_id)`` pairs of the
        resource; return how many were deleted."""
        ...

    async def set_retention_policy(
        self, scope: Scope, max_age_days: float | None, now: datetime | None = None
    ) -> float | None:
        """[set_retention_policy_v1] Store the maximum age (0..36,500 days; ``None`` removes it) of the entries of
        ``scope``'s thread, or of its resource when the scope has no thread; returns what is stored."""
        ...

    async def get_retention_policy(self, scope: Scope) -> RetentionPolicy:
        """[get_retention_policy_v1] The resource's and (when ``scope`` has one) the thread's stored maximum age."""
        ...

    async def reembed(
        self, scope: Scope, ids: Sequence[str], texts: Sequence[str], embeddings: Sequence[Sequence[float]],
        model: EmbeddingModel | None = None,
    ) -> int:
        """[reembed_v1] New embeddings for entries whose text is still ``texts``; return how many were updated.
        With a ``model`` (and embeddings), the thread's recorded model becomes ``model`` in the same transaction."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class WorkingStore(Protocol):
    """Versioned working-memory documents, resource- or thread-scoped."""

    async def get_working(self, scope: Scope) -> WorkingMemoryRecord | None: ...

    async def update_working(
        self, scope: Scope, data: dict[str, Any], expected_version: int | None
    ) -> WorkingMemoryRecord:
        """Replace the document; version + 1. Raises ``WorkingMemoryVersionConflict`` on a stale ``expected_version``."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class RagVectorStore(Protocol):
    """The standalone vector store for RAG.

    Chunks live in a *scope* (a knowledge base) of a tenant, in numbered
    *generations*: a scope's current generation (0 until set) is what reads
    and writes use by default, so a host can build generation N + 1 beside the
    live one and switch with :meth:`set_current_generation`. Every call names
    ``tenant_id`` and ``scope`` (non-blank, at most 256 bytes) and touches that
    tenant only. Each method is one SQL function on Postgres (named in brackets).

    Reads take ``filter`` (a metadata filter, docs/api.md "Metadata filters":
    field paths, operators, ``$and``/``$or``/``$not`` and containment
    documents; it can only narrow; a malformed one raises
    :class:`~prism_memory.errors.InvalidFilterError`) and ``authorization`` (a
    :class:`RagAccessConstraint`: document ACL, applied inside the query
    before ranking; ``None`` reads without ACL). ``top_k`` is 1..32.
    """

    async def upsert(self, tenant_id: str, scope: str, chunks: Sequence[RagChunk], *, generation: int | None = None) -> int:
        """[rag_upsert_v1] Insert or replace ``chunks`` (at most 1,000) in ``generation`` (default: current), all or nothing; returns how many."""
        ...

    async def query(
        self,
        tenant_id: str,
        scope: str,
        embedding: Sequence[float],
        *,
        top_k: int = 10,
        filter: dict[str, Any] | None = None,
        authorization: RagAccessConstraint | None = None,
        generation: int | None = None,
    ) -> list[RagMatch]:
        """[rag_query_v1] The ``min(top_k, matching chunks)`` nearest chunks by cosine similarity, score desc then id."""
        ...

    async def lexical_query(
        self,
        tenant_id: str,
        scope: str,
        text: str,
        *,
        top_k: int = 10,
        filter: dict[str, Any] | None = None,
        authorization: RagAccessConstraint | None = None,
        generation: int | None = None,
    ) -> list[RagMatch]:
        """[rag_lexical_query_v1] Full-text search over ``text_tsv``: chunks holding any query term, by the share held."""
        ...

    async def get_by_source(
        self,
        tenant_id: str,
        scope: str,
        source_id: str,
        *,
        authorization: RagAccessConstraint | None = None,
        generation: int | None = None,
        after_id: str | None = None,
        limit: int = 1000,
    ) -> list[StoredChunk]:
        """[rag_get_by_source_v1] A source's chunks by id after ``after_id``, at most ``limit`` (1..1000)."""
        ...

    async def delete(
        self,
        tenant_id: str,
        scope: str,
        *,
        ids: Sequence[str] | None = None,
        source_id: str | None = None,
        generation: int | None = None,
    ) -> int:
        """[rag_delete_v1] Delete the chunks matching every criterion given (every generation unless one is named)."""
        ...

    async def get_current_generation(self, tenant_id: str, scope: str) -> int:
        """[rag_get_generation_v1] The scope's current generation (0 when never set)."""
        ...

    async def set_current_generation(self, tenant_id: str, scope: str, generation: int) -> int:
        """[rag_set_generation_v1] Point the scope at ``generation`` (0..2^53 - 1)."""
        ...

    async def set_source_access(
        self,
        tenant_id: str,
        source_id: str,
        *,
        principal_ids: Sequence[str] = (),
        group_ids: Sequence[str] = (),
        access_version: int,
    ) -> int:
        """[rag_set_source_access_v1] Replace the source's grants (none: revoke all) at ``access_version``.

        The version never goes back: a lower one raises
        :class:`AccessVersionConflict` and changes nothing. Returns the number of grants.
        """
        ...

    async def check_source_access(
        self,
        tenant_id: str,
        source_id: str,
        authorization: RagAccessConstraint,
        *,
        access_version: int | None = None,
    ) -> bool:
        """[rag_check_source_access_v1] Whether the reader holds a grant on the source (at ``access_version`` or newer)."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[RagVectorStore]:
        """``async with store.transaction() as tx:``: ``tx``'s calls land together, or none if the block raises."""
        ...

    async def close(self) -> None: ...


def default_stores(
    vector_store: VectorStore | None = None, working_store: WorkingStore | None = None
) -> tuple[VectorStore, WorkingStore]:
    """The stores a memory runs on: ``vector_store`` and ``working_store`` as given, and for each one that is
    ``None`` a new, empty store of the in-memory emulator, the default backend (nothing is kept after the
    process ends; unpinned width)."""
    if vector_store is not None and working_store is not None:
        return vector_store, working_store
    # The contracts and the facade built on them do not depend on an implementation at import time:
    # the emulator is named as the default here only, where a memory without stores gets its stores.
    from . import emulator

    return (
        vector_store if vector_store is not None else emulator.create_memory_vector_store(),
        working_store if working_store is not None else emulator.create_memory_working_store(),
    )
