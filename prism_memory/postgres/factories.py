"""Opening the Postgres stores: the install check, the pool, and the factories that return the stores."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg import sql
from psycopg.types import TypeInfo
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from ..citus import HAS_CITUS_SQL, IS_DISTRIBUTED_SQL
from ..errors import PrismMemoryError, SchemaVersionError, StoreError, StoreUnavailableError
from ..schema import SCHEMA_VERSION, SchemaConfig, migrate
from .connections import ReconnectingPool
from .errors import wrap_exceptions
from .queries import Queries, build_queries, install_info_query
from .store import PostgresVectorStore, PostgresWorkingStore


@dataclass(slots=True)
class PostgresMemoryStores:
    """The stores returned by :func:`create_postgres_memory_stores`; they share one pool."""

    vector_store: PostgresVectorStore
    working_store: PostgresWorkingStore
    pool: AsyncConnectionPool
    config: SchemaConfig

    async def close(self) -> None:
        """Close the shared connection pool."""
        await self.pool.close()

    async def __aenter__(self) -> PostgresMemoryStores:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def _check_install(connection_string: str, config: SchemaConfig) -> tuple[str, TypeInfo, int | None, bool]:
    """Refuse a database whose schema is missing, older, newer, or holds another table/dimension.

    Returns pgvector's schema and ``vector`` type (looked up by its qualified
    name so the caller's ``search_path`` does not matter), the install's
    pinned dimension, and whether its entries table is Citus-distributed.
    """
    with wrap_exceptions():
        async with await psycopg.AsyncConnection.connect(connection_string, autocommit=True) as conn:
            cursor = await conn.execute(install_info_query(config.schema))
            version, table, dimensions, vector_schema = await cursor.fetchone()
            vector_type = await TypeInfo.fetch(conn, sql.Identifier(vector_schema, "vector"))
            distributed = await _is_distributed(conn, config)
    if version > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"schema {config.schema!r} is at revision {version}, newer than this prism-memory understands ({SCHEMA_VERSION}); upgrade the package"
        )
    if version < SCHEMA_VERSION:
        raise SchemaVersionError(f"schema {config.schema!r} is at revision {version}, older than {SCHEMA_VERSION}; run migrations: prism-memory --dsn URL migrate, or prism_memory.schema.migrate")
    if table != config.table or (config.dimensions is not None and dimensions != config.dimensions):
        raise SchemaVersionError(
            f"schema {config.schema!r} holds table {table!r} with dimensions {dimensions}, "
            f"not {config.table!r} with {config.dimensions}; one install per schema"
        )
    return vector_schema, vector_type, dimensions, distributed


async def _is_distributed(conn: psycopg.AsyncConnection, config: SchemaConfig) -> bool:
    """Whether ``config``'s entries table is a Citus distributed table (the async twin of
    :func:`prism_memory.citus.is_distributed`)."""
    cursor = await conn.execute(HAS_CITUS_SQL)
    if not (await cursor.fetchone())[0]:
        return False
    cursor = await conn.execute(IS_DISTRIBUTED_SQL, (config.names["entries"],))
    return bool((await cursor.fetchone())[0])


async def _open_pool(
    connection_string: str,
    config: SchemaConfig,
    skip_migrations: bool,
    min_pool_size: int,
    max_pool_size: int,
    pool_timeout: float,
) -> tuple[AsyncConnectionPool, Queries, SchemaConfig, bool]:
    """Migrate (unless ``skip_migrations``), check the install, and open an autocommit pool.

    The returned config carries the install's pinned dimension (so an
    unpinned request against a pinned install still checks widths in Python);
    the flag says whether the install is Citus-distributed.
    """
    if not skip_migrations:
        try:
            await asyncio.to_thread(migrate, connection_string, config)
        except PrismMemoryError:
            raise
        except Exception as exc:  # alembic/SQLAlchemy/psycopg: typed here, the original is __cause__
            raise StoreError(
                f"could not migrate schema {config.schema!r}: {exc.__class__.__name__}: {exc}; "
                "a role that may not run migrations should pass skip_migrations=True"
            ) from exc
    vector_schema, vector_type, dimensions, distributed = await _check_install(connection_string, config)
    config = SchemaConfig(config.schema, config.table, dimensions)
    queries = build_queries(config.schema, vector_schema)

    async def configure(conn: psycopg.AsyncConnection) -> None:
        register_vector_info(conn, vector_type)
        # The writers serialise on per-thread locks taken inside the statement: only READ COMMITTED lets
        # them see what the writer before them committed (lock_thread_v1 refuses other levels, PM017).
        await conn.execute("set default_transaction_isolation = 'read committed'")

    pool = ReconnectingPool(
        connection_string,
        min_size=min_pool_size,
        max_size=max_pool_size,
        kwargs={"autocommit": True},
        configure=configure,
        timeout=pool_timeout,
        open=False,
    )
    try:
        await pool.open(wait=True, timeout=10)
    except PoolTimeout as exc:
        await pool.close()
        raise StoreUnavailableError(f"could not open connections to the database: {exc}") from exc
    return pool, queries, config, distributed


async def create_postgres_memory_stores(
    connection_string: str,
    *,
    schema: str = "prism_memory",
    table: str = "semantic_memory",
    dimensions: int | None = None,
    skip_migrations: bool = False,
    min_pool_size: int = 1,
    max_pool_size: int = 8,
    pool_timeout: float = 30.0,
) -> PostgresMemoryStores:
    """Connect, migrate (unless ``skip_migrations``) and return the Postgres stores.

    ``connection_string``: a libpq URL (``postgresql://...``). ``dimensions``
    pins ``vector(N)`` (and, up to 2,000, builds HNSW over the RAG chunks); it
    must equal the embedder's ``dimensions``. Raises
    :class:`InvalidIdentifierError` for a bad schema or table name and
    :class:`SchemaVersionError` when the installed schema is missing, older,
    newer, or holds another table/dimension. Close the result
    (``await stores.close()``) to end its pool.

    ``connection_string`` may list several servers with
    ``target_session_attrs=read-write``
    (``postgresql://user@/db?host=h1,h2&port=p1,p2&target_session_attrs=read-write``:
    hosts and ports in the query, which the migrations read too): the pool
    then follows a failover to the promoted standby (``docs/operations.md``). A call waits at most ``pool_timeout`` seconds
    for a pooled connection. Calls raise :class:`StoreUnavailableError` while
    the database cannot be reached (or took no write: a standby) and
    :class:`StoreClosedError` after ``close()``; a write's connection is
    checked before use, only reads are sent again, and a lost connection is
    reconnected at most about a second after the server is back
    (:mod:`prism_memory.postgres.connections`).
    """
    config = SchemaConfig(schema, table, dimensions)
    pool, queries, config, distributed = await _open_pool(
        connection_string, config, skip_migrations, min_pool_size, max_pool_size, pool_timeout
    )
    return PostgresMemoryStores(
        PostgresVectorStore(pool, config, queries, distributed),
        PostgresWorkingStore(pool, config, queries, distributed),
        pool,
        config,
    )


async def create_postgres_vector_store(
    connection_string: str,
    *,
    schema: str = "prism_memory",
    table: str = "semantic_memory",
    dimensions: int | None = None,
    skip_migrations: bool = False,
    min_pool_size: int = 1,
    max_pool_size: int = 8,
    pool_timeout: float = 30.0,
) -> PostgresVectorStore:
    """The standalone durable vector store for RAG: a :class:`PostgresVectorStore` that owns its pool.

    Connects to the host's knowledge database, migrates (unless
    ``skip_migrations``) and returns a store that owns its pool; ``await
    store.close()`` ends it. ``dimensions`` pins the embedding column to
    ``vector(dimensions)`` with an HNSW index (up to 2,000 dimensions); every
    embedding written or queried must then have exactly that width, else
    :class:`DimensionMismatchError` (fail closed, never drift). Unpinned, the
    first chunk of a scope fixes the scope's width. Raises
    :class:`InvalidIdentifierError` for a bad schema or table name and
    :class:`SchemaVersionError` when the install is missing (with
    ``skip_migrations``), older, newer, or pinned to another dimension.
    Connection failures are as for :func:`create_postgres_memory_stores`
    (``pool_timeout``, :class:`StoreUnavailableError`, :class:`StoreClosedError`).
    """
    config = SchemaConfig(schema, table, dimensions)
    pool, queries, config, distributed = await _open_pool(
        connection_string, config, skip_migrations, min_pool_size, max_pool_size, pool_timeout
    )
    return PostgresVectorStore(pool, config, queries, distributed)
