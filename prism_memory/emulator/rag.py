"""The emulator's RAG vector store: the rules of the ``rag_*_v1`` SQL functions in Python.

It always ranks exactly (Postgres ranks exactly below 2,000 candidates, and
through HNSW from there). Metadata filters are evaluated by
:func:`prism_memory.filters.matches`, the mirror of ``metadata_filter_v1``;
ties break on id in code-point order, like ``collate "C"``.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .. import rag_arguments
from ..checks import check_text
from ..embedding import embedding_values
from ..errors import (
    AccessVersionConflict,
    DimensionMismatchError,
    InvalidQueryError,
    StoreError,
)
from ..filters import matches
from ..lexical import lexical_terms, query_terms
from ..types import RagAccessConstraint, RagChunk, RagMatch, StoredChunk
from .rules import (
    check_chunks,
    check_generation,
    check_query_text,
    check_rag_delete,
    check_rag_read,
    check_rag_scope,
    check_source_grants,
    check_source_page,
    check_source_reader,
)
from .vectors import float32, norm_squared, similarity


@dataclass(frozen=True, slots=True)
class _Chunk:
    """One row of ``<table>_rag_chunk``."""

    id: str
    source_id: str
    text: str
    metadata: dict[str, Any]
    embedding: np.ndarray  # float32, as pgvector stores it
    norm_squared: float
    terms: frozenset[str]
    generation: int
    access_version: int | None
    created_at: datetime
    updated_at: datetime


@dataclass(slots=True)
class _RagState:
    """Everything the RAG tables hold; a transaction works on a copy and swaps it in at commit."""

    #: (tenant, scope) -> (generation, chunk id) -> chunk
    chunks: dict[tuple[str, str], dict[tuple[int, str], _Chunk]] = field(default_factory=dict)
    #: (tenant, scope) -> current generation
    generations: dict[tuple[str, str], int] = field(default_factory=dict)
    #: (tenant, source) -> (access version, {(grantee kind, grantee id)})
    acl: dict[tuple[str, str], tuple[int, frozenset[tuple[str, str]]]] = field(default_factory=dict)

    def copy(self) -> _RagState:
        return _RagState({key: dict(rows) for key, rows in self.chunks.items()}, dict(self.generations), dict(self.acl))


class EmulatorRagStore:
    """The RAG contract in memory.

    Mixed into :class:`prism_memory.emulator.EmulatorVectorStore`; see
    :class:`prism_memory.stores.RagVectorStore` for the contract. Each
    method checks its arguments' types as the Postgres store does
    (:mod:`prism_memory.rag_arguments`), then mirrors the SQL function named in its
    docstring (its input rules: :mod:`prism_memory.emulator.rules`). Writes outside a
    transaction wait for an open transaction to end.
    """

    dimensions: int | None

    def _init_rag(self) -> None:
        self._rag = _RagState()
        self._rag_lock = asyncio.Lock()
        self._in_transaction = False
        self._transaction_task: asyncio.Task | None = None

    @asynccontextmanager
    async def _writing(self) -> AsyncIterator[None]:
        """Writes wait for an open transaction (as Postgres writers wait for its locks).

        A write through the store from inside its own transaction block would
        wait for itself; it raises :class:`StoreError` instead (write through ``tx``).
        """
        if self._in_transaction:
            yield
            return
        if self._transaction_task is not None and self._transaction_task is asyncio.current_task():
            raise StoreError("write through the transaction's store (tx), not the store, inside its block")
        async with self._rag_lock:
            yield

    def _current_generation(self, key: tuple[str, str]) -> int:
        return self._rag.generations.get(key, 0)

    def _check_width(self, key: tuple[str, str], width: int) -> None:
        """Mirror of ``assert_dimensions_v2`` for a RAG scope."""
        expected = self.dimensions
        if expected is None:
            for chunk in self._rag.chunks.get(key, {}).values():
                expected = int(chunk.embedding.shape[0])
                break
        if expected is not None and width != expected:
            raise DimensionMismatchError(f"embedding has {width} dimensions, expected {expected}")

    def _holds_grant(self, tenant_id: str, source_id: str, reader: RagAccessConstraint, access_version: int | None) -> bool:
        """Mirror of the ACL EXISTS: a grant to the principal or a group, at ``access_version`` or newer."""
        version, grants = self._rag.acl.get((tenant_id, source_id), (0, frozenset()))
        granted = ("principal", reader.principal_id) in grants or any(("group", group) in grants for group in reader.group_ids)
        return granted and version >= (access_version or 0)

    def _readable(self, tenant_id: str, chunk: _Chunk, reader: RagAccessConstraint | None) -> bool:
        """Mirror of ``rag_where_v1``'s ACL check for one chunk (everything is readable without a reader)."""
        return reader is None or self._holds_grant(tenant_id, chunk.source_id, reader, chunk.access_version)

    def _candidates(
        self,
        tenant_id: str,
        scope: str,
        top_k: int,
        filter: str | None,
        reader: RagAccessConstraint | None,
        generation: int | None,
    ) -> tuple[tuple[str, str], list[_Chunk]]:
        """Mirror of ``rag_read_generation_v1`` plus ``rag_where_v1``, after :func:`rag_arguments.read_arguments`: (key, candidates)."""
        wanted = check_rag_read(tenant_id, scope, top_k, filter, reader, generation)
        key = (tenant_id, scope)
        read_generation = self._current_generation(key) if generation is None else int(generation)  # type: ignore[arg-type]
        candidates = [
            chunk
            for (chunk_generation, _), chunk in self._rag.chunks.get(key, {}).items()
            if chunk_generation == read_generation
            and matches(wanted, chunk.metadata)
            and self._readable(tenant_id, chunk, reader)
        ]
        return key, candidates

    async def upsert(self, tenant_id: str, scope: str, chunks: Sequence[RagChunk], *, generation: int | None = None) -> int:
        """Mirror of ``rag_upsert_v1``."""
        rag_arguments.scope_arguments(tenant_id, scope)
        rag_arguments.generation_argument(generation)
        arguments = rag_arguments.chunk_arguments(chunks)
        check_rag_scope(tenant_id, scope)
        check_generation(generation)
        if not chunks:
            return 0
        checked = check_chunks(chunks, arguments)
        key = (tenant_id, scope)
        async with self._writing():
            self._check_width(key, checked[0][1].shape[0])
            target = self._current_generation(key) if generation is None else generation
            rows = self._rag.chunks.setdefault(key, {})
            now = datetime.now(timezone.utc)
            for chunk, (metadata, stored) in zip(chunks, checked):
                existing = rows.get((target, chunk.id))
                rows[(target, chunk.id)] = _Chunk(
                    chunk.id, chunk.source_id, chunk.text, metadata, stored, norm_squared(stored),
                    frozenset(lexical_terms(chunk.text)), target, chunk.access_version,
                    existing.created_at if existing else now, now,
                )
        return len(chunks)

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
        """Mirror of ``rag_query_v1`` (always the exact path)."""
        document, reader = rag_arguments.read_arguments(tenant_id, scope, top_k, filter, authorization, generation)
        values = embedding_values(embedding, "the query embedding")
        key, candidates = self._candidates(tenant_id, scope, top_k, document, reader, generation)
        query = float32(values, "the query embedding")
        self._check_width(key, query.shape[0])
        query_double = query.astype(np.float64)
        query_norm = norm_squared(query)
        scored = [(similarity(chunk.embedding, chunk.norm_squared, query_double, query_norm), chunk) for chunk in candidates]
        scored.sort(key=lambda item: (-item[0], item[1].id))
        return [_match(chunk, score) for score, chunk in scored[:top_k]]

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
        """Mirror of ``rag_lexical_query_v1``: share of the query's distinct terms held, chunks with at least one."""
        document, reader = rag_arguments.read_arguments(tenant_id, scope, top_k, filter, authorization, generation)
        check_text(text, "the query text", InvalidQueryError)
        _, candidates = self._candidates(tenant_id, scope, top_k, document, reader, generation)
        check_query_text(text)
        terms = set(query_terms(text))
        if not terms:
            return []
        scored = [(len(terms & chunk.terms) / len(terms), chunk) for chunk in candidates if terms & chunk.terms]
        scored.sort(key=lambda item: (-item[0], item[1].id))
        return [_match(chunk, score) for score, chunk in scored[:top_k]]

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
        """Mirror of ``rag_get_by_source_v1``."""
        _, reader = rag_arguments.read_arguments(tenant_id, scope, 1, None, authorization, generation)
        rag_arguments.source_page_arguments(source_id, after_id, limit)
        _, candidates = self._candidates(tenant_id, scope, 1, None, reader, generation)
        check_source_page(source_id, limit)
        chosen = sorted(
            (chunk for chunk in candidates if chunk.source_id == source_id and (after_id is None or chunk.id > after_id)),
            key=lambda chunk: chunk.id,
        )
        return [
            StoredChunk(
                id=chunk.id, source_id=chunk.source_id, text=chunk.text, metadata=copy.deepcopy(chunk.metadata),
                embedding=[float(value) for value in chunk.embedding], generation=chunk.generation,
                access_version=chunk.access_version, created_at=chunk.created_at, updated_at=chunk.updated_at,
            )
            for chunk in chosen[:limit]
        ]

    async def delete(
        self,
        tenant_id: str,
        scope: str,
        *,
        ids: Sequence[str] | None = None,
        source_id: str | None = None,
        generation: int | None = None,
    ) -> int:
        """Mirror of ``rag_delete_v1``: chunks matching every criterion given, in every generation unless one is named."""
        listed = rag_arguments.delete_arguments(tenant_id, scope, ids, source_id, generation)
        check_rag_delete(tenant_id, scope, listed, source_id, generation)
        wanted = None if listed is None else set(listed)
        async with self._writing():
            rows = self._rag.chunks.get((tenant_id, scope), {})
            doomed = [
                row_key
                for row_key, chunk in rows.items()
                if (wanted is None or chunk.id in wanted)
                and (source_id is None or chunk.source_id == source_id)
                and (generation is None or chunk.generation == generation)
            ]
            for row_key in doomed:
                del rows[row_key]
        return len(doomed)

    async def get_current_generation(self, tenant_id: str, scope: str) -> int:
        """Mirror of ``rag_get_generation_v1``: the pointer, 0 when never set."""
        rag_arguments.scope_arguments(tenant_id, scope)
        check_rag_scope(tenant_id, scope)
        return self._current_generation((tenant_id, scope))

    async def set_current_generation(self, tenant_id: str, scope: str, generation: int) -> int:
        """Mirror of ``rag_set_generation_v1``."""
        rag_arguments.scope_arguments(tenant_id, scope)
        rag_arguments.generation_argument(generation)
        check_rag_scope(tenant_id, scope)
        check_generation(generation, required=True)
        async with self._writing():
            self._rag.generations[(tenant_id, scope)] = generation
        return generation

    async def set_source_access(
        self,
        tenant_id: str,
        source_id: str,
        *,
        principal_ids: Sequence[str] = (),
        group_ids: Sequence[str] = (),
        access_version: int,
    ) -> int:
        """Mirror of ``rag_set_source_access_v1``: replace the source's grants at a version that never goes back."""
        principals, groups = rag_arguments.grant_arguments(tenant_id, source_id, principal_ids, group_ids, access_version)
        check_source_grants(tenant_id, source_id, principals, groups, access_version)
        grants = frozenset([("principal", grantee) for grantee in principals] + [("group", grantee) for grantee in groups])
        async with self._writing():
            stored = self._rag.acl.get((tenant_id, source_id))
            if stored is not None and access_version < stored[0]:
                raise AccessVersionConflict(f"source {source_id} is at access version {stored[0]}, newer than {access_version}")
            self._rag.acl[(tenant_id, source_id)] = (access_version, grants)
        return len(grants)

    async def check_source_access(
        self,
        tenant_id: str,
        source_id: str,
        authorization: RagAccessConstraint,
        *,
        access_version: int | None = None,
    ) -> bool:
        """Mirror of ``rag_check_source_access_v1``."""
        rag_arguments.source_arguments(tenant_id, source_id)
        rag_arguments.access_version_argument(access_version)
        reader = check_source_reader(tenant_id, source_id, rag_arguments.reader_argument(authorization))
        return self._holds_grant(tenant_id, source_id, reader, access_version)

    def transaction(self) -> AbstractAsyncContextManager[EmulatorRagStore]:
        """All or nothing: ``async with store.transaction() as tx:`` gives a store whose writes land
        together when the block exits without an exception. Transactions do not nest (:class:`StoreError`)."""
        if self._in_transaction or (self._transaction_task is not None and self._transaction_task is asyncio.current_task()):
            raise StoreError("a transaction is already open on this store")
        return self._transaction()

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[EmulatorRagStore]:
        async with self._rag_lock:
            view = _EmulatorRagTransaction(self.dimensions, self._rag.copy())
            self._transaction_task = asyncio.current_task()
            try:
                yield view
                self._rag = view._rag
            finally:
                view._state = None
                self._transaction_task = None


class _EmulatorRagTransaction(EmulatorRagStore):
    """The store inside :meth:`EmulatorRagStore.transaction`: works on a copy, no locks of its own."""

    def __init__(self, dimensions: int | None, state: _RagState) -> None:
        self.dimensions = dimensions
        self._state: _RagState | None = state
        self._in_transaction = True
        self._transaction_task = None

    @property
    def _rag(self) -> _RagState:  # type: ignore[override]
        if self._state is None:
            raise StoreError("this transaction has ended; use the store itself")
        return self._state

    async def close(self) -> None:
        """Nothing to release: the transaction ends with its ``async with`` block."""


def _match(chunk: _Chunk, score: float) -> RagMatch:
    return RagMatch(id=chunk.id, source_id=chunk.source_id, text=chunk.text, metadata=copy.deepcopy(chunk.metadata),
                    score=score, generation=chunk.generation, access_version=chunk.access_version)
