"""The Postgres RAG vector store: one ``rag_*_v1`` call per operation.

Python checks only what SQL cannot see (:mod:`prism_memory.rag_arguments`: types,
encodings, the JSON codec, and the few rules the SQL functions lack); every
other rule is the SQL function's, raised as its SQLSTATE and mapped to the
same error type the emulator raises (:func:`prism_memory.postgres.errors.translate`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import numpy as np
import psycopg

from .. import rag_arguments
from ..checks import as_utc, check_text
from ..embedding import embedding_values
from ..errors import InvalidQueryError, StoreError
from ..schema import SchemaConfig
from ..types import RagAccessConstraint, RagChunk, RagMatch, StoredChunk
from .connections import pooled_connection
from .errors import translate
from .queries import Queries


class PostgresRagStore:
    """The :class:`prism_memory.stores.RagVectorStore` calls, over ``self._fetch`` (a pool, or one transaction's connection)."""

    config: SchemaConfig
    queries: Queries
    #: ``(query, params, read=False) -> rows``, provided by the class this is mixed into; ``read=True``
    #: marks a statement that changes nothing (``prism_memory.postgres.connections``: only reads are sent again).
    _fetch: Callable[..., Awaitable[list[tuple[Any, ...]]]]

    @staticmethod
    def _read_args(
        tenant_id: str, scope: str, top_k: int, filter: object, authorization: object, generation: object
    ) -> tuple[Any, ...]:
        """Checked (:func:`rag_arguments.read_arguments`), as ``READ_ARGS`` binds them: filter, acl, principal, groups, generation."""
        document, reader = rag_arguments.read_arguments(tenant_id, scope, top_k, filter, authorization, generation)
        return (
            document,
            reader is not None,
            None if reader is None else reader.principal_id,
            [] if reader is None else list(reader.group_ids),
            generation,
        )

    async def upsert(self, tenant_id: str, scope: str, chunks: Sequence[RagChunk], *, generation: int | None = None) -> int:
        """``rag_upsert_v1``: one transaction, all chunks or none."""
        rag_arguments.scope_arguments(tenant_id, scope)
        rag_arguments.generation_argument(generation)
        arguments = rag_arguments.chunk_arguments(chunks)
        [(written,)] = await self._fetch(
            self.queries.rag_upsert,
            (
                tenant_id,
                scope,
                [chunk.id for chunk in chunks],
                [chunk.source_id for chunk in chunks],
                [chunk.text for chunk in chunks],
                [np.asarray(vector, dtype=np.float32) for _, vector in arguments],
                [metadata for metadata, _ in arguments],
                [chunk.access_version for chunk in chunks],
                generation,
            ),
        )
        return int(written)

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
        """``rag_query_v1``."""
        read = self._read_args(tenant_id, scope, top_k, filter, authorization, generation)
        vector = embedding_values(embedding, "the query embedding")
        rows = await self._fetch(
            self.queries.rag_query, (tenant_id, scope, np.asarray(vector, dtype=np.float32), top_k, *read), read=True
        )
        return [_match(row) for row in rows]

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
        """``rag_lexical_query_v1``."""
        read = self._read_args(tenant_id, scope, top_k, filter, authorization, generation)
        check_text(text, "the query text", InvalidQueryError)
        rows = await self._fetch(self.queries.rag_lexical_query, (tenant_id, scope, text, top_k, *read), read=True)
        return [_match(row) for row in rows]

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
        """``rag_get_by_source_v1``."""
        _, acl, principal, groups, _ = self._read_args(tenant_id, scope, 1, None, authorization, generation)
        rag_arguments.source_page_arguments(source_id, after_id, limit)
        rows = await self._fetch(
            self.queries.rag_get_by_source,
            (tenant_id, scope, source_id, after_id, limit, acl, principal, groups, generation),
            read=True,
        )
        return [
            StoredChunk(id=chunk_id, source_id=source, text=text, metadata=metadata, embedding=_floats(embedding),
                        generation=chunk_generation, access_version=access_version,
                        created_at=as_utc(created_at), updated_at=as_utc(updated_at))
            for (chunk_id, source, text, metadata, embedding, chunk_generation, access_version, created_at,
                 updated_at) in rows
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
        """``rag_delete_v1``."""
        listed = rag_arguments.delete_arguments(tenant_id, scope, ids, source_id, generation)
        [(deleted,)] = await self._fetch(
            self.queries.rag_delete,
            (tenant_id, scope, listed, source_id, generation),
        )
        return int(deleted)

    async def get_current_generation(self, tenant_id: str, scope: str) -> int:
        """``rag_get_generation_v1``: the pointer, 0 when never set."""
        rag_arguments.scope_arguments(tenant_id, scope)
        [(generation,)] = await self._fetch(self.queries.rag_get_generation, (tenant_id, scope), read=True)
        return int(generation)

    async def set_current_generation(self, tenant_id: str, scope: str, generation: int) -> int:
        """``rag_set_generation_v1``."""
        rag_arguments.scope_arguments(tenant_id, scope)
        rag_arguments.generation_argument(generation)
        [(current,)] = await self._fetch(self.queries.rag_set_generation, (tenant_id, scope, generation))
        return int(current)

    async def set_source_access(
        self,
        tenant_id: str,
        source_id: str,
        *,
        principal_ids: Sequence[str] = (),
        group_ids: Sequence[str] = (),
        access_version: int,
    ) -> int:
        """``rag_set_source_access_v1``."""
        principals, groups = rag_arguments.grant_arguments(tenant_id, source_id, principal_ids, group_ids, access_version)
        [(granted,)] = await self._fetch(
            self.queries.rag_set_source_access, (tenant_id, source_id, principals, groups, access_version)
        )
        return int(granted)

    async def check_source_access(
        self,
        tenant_id: str,
        source_id: str,
        authorization: RagAccessConstraint,
        *,
        access_version: int | None = None,
    ) -> bool:
        """``rag_check_source_access_v1``."""
        rag_arguments.source_arguments(tenant_id, source_id)
        rag_arguments.access_version_argument(access_version)
        reader = rag_arguments.reader_argument(authorization)
        [(allowed,)] = await self._fetch(
            self.queries.rag_check_source_access,
            (tenant_id, source_id, None if reader is None else reader.principal_id,
             [] if reader is None else list(reader.group_ids), access_version),
            read=True,
        )
        return bool(allowed)


class PostgresRagTransaction(PostgresRagStore):
    """The store inside ``transaction()``: every call runs on one connection, in one transaction."""

    def __init__(self, connection: psycopg.AsyncConnection, config: SchemaConfig, queries: Queries) -> None:
        self.connection: psycopg.AsyncConnection | None = connection
        self.config = config
        self.queries = queries

    async def _fetch(self, query: Any, params: Sequence[Any], read: bool = False) -> list[tuple[Any, ...]]:
        """One call in its own savepoint: a call that fails changes nothing and leaves the transaction usable.

        Nothing is sent again inside a transaction, reads included: a lost connection ends the transaction.
        """
        if self.connection is None:
            raise StoreError("this transaction has ended; use the store itself")
        try:
            async with self.connection.transaction():
                cursor = await self.connection.execute(query, params)
                return await cursor.fetchall()
        except psycopg.Error as exc:
            raise translate(exc) from exc

    def transaction(self) -> AbstractAsyncContextManager[PostgresRagTransaction]:
        """Refused: transactions do not nest."""
        raise StoreError("a transaction is already open on this store")

    async def close(self) -> None:
        """Nothing to release: the transaction ends with its ``async with`` block."""


@asynccontextmanager
async def pooled_transaction(pool: Any, config: SchemaConfig, queries: Queries) -> AsyncIterator[PostgresRagTransaction]:
    """A checked pooled connection in one transaction: committed when the block exits cleanly, rolled back otherwise.

    The connection is checked before ``BEGIN`` (:func:`pooled_connection`), so a connection a restart
    ended is replaced; the transaction itself is never run again. No connection within the pool's
    timeout, or a connection lost during the block, raises :class:`StoreUnavailableError`: the
    transaction was rolled back, unless the connection was lost while committing (then its outcome
    is unknown).
    """
    try:
        async with pooled_connection(pool, checked=True) as connection, connection.transaction():
            view = PostgresRagTransaction(connection, config, queries)
            try:
                yield view
            finally:
                view.connection = None
    except psycopg.Error as exc:
        raise translate(exc) from exc


def _floats(embedding: Any) -> list[float]:
    """A ``vector`` as pgvector's loader returns it (``Vector`` or an array), as ``list[float]``."""
    values = embedding.to_list() if hasattr(embedding, "to_list") else embedding
    return [float(value) for value in values]


def _match(row: Sequence[Any]) -> RagMatch:
    chunk_id, source_id, text, metadata, generation, access_version, score = row
    return RagMatch(id=chunk_id, source_id=source_id, text=text, metadata=metadata, score=float(score),
                    generation=int(generation), access_version=access_version)
