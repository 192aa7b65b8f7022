"""The memories an MCP server's callers reach: one :class:`~prism_memory.Memory` per scope, over the stores
of the scope's database, opened and checked before serving."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from ..embedding import Embedder
from ..emulator import create_memory_vector_store, create_memory_working_store
from ..errors import ConfigurationError, PrismMemoryError
from ..memory import Memory, create_memory
from ..redaction import Redaction
from ..stores import VectorStore, WorkingStore
from ..types import Scope
from .scopes import ServerScope


class MemoryDirectory:
    """The memories a server's callers reach: one :class:`Memory` per scope (resource-scoped: working memory)
    and its threads (:meth:`Memory.for_thread`: semantic memory), over the stores of the scope's database.

    ``stores`` maps a scope's ``dsn`` (``None``: the server's database) to its (vector, working) stores;
    ``memory_options`` go to :func:`create_memory` (``schema``, ``working_memory_template``, ``limits``,
    ``secrets``, ``redactor``, ``require_consent``, ``clock``, ...).
    """

    def __init__(self, stores: Mapping[str | None, tuple[VectorStore, WorkingStore]], embedder: Embedder, **memory_options: Any):
        self._stores = dict(stores)
        self._embedder = embedder
        self._options = memory_options
        self._resources: dict[ServerScope, Memory] = {}
        #: The redaction every memory here applies (and the server applies to its error messages).
        self.redaction = Redaction(memory_options.get("secrets"), memory_options.get("redactor"))

    @property
    def working_schema(self) -> Mapping[str, Any] | None:
        """The JSON Schema working memory must pass (the ``schema`` option), ``None`` without one."""
        return self._options.get("schema")

    def resource(self, scope: ServerScope) -> Memory:
        """The memory of ``scope``'s resource (no thread: working memory is per resource)."""
        memory = self._resources.get(scope)
        if memory is None:
            vector_store, working_store = self._stores[scope.dsn]
            memory = create_memory(
                tenant_id=scope.tenant_id, resource_id=scope.resource_id, embedder=self._embedder,
                vector_store=vector_store, working_store=working_store, **self._options,
            )
            self._resources[scope] = memory
        return memory

    def thread(self, scope: ServerScope, thread_id: str | None) -> Memory:
        """The memory of ``thread_id`` (default: the scope's thread) of ``scope``'s resource; raises
        :class:`~prism_memory.errors.InvalidScopeError` for a malformed thread id."""
        return self.resource(scope).for_thread(scope.thread_id if thread_id is None else thread_id)


@asynccontextmanager
async def open_stores(
    backend: str,
    dsn: str | None,
    scopes: Sequence[ServerScope],
    *,
    schema: str,
    table: str,
    dimensions: int,
    migrate: bool,
) -> AsyncIterator[dict[str | None, tuple[VectorStore, WorkingStore]]]:
    """The stores :class:`MemoryDirectory` needs for ``scopes``; closed on exit.

    ``backend`` ``"memory"``: one emulator for every scope (a scope naming a ``dsn`` raises
    :class:`ConfigurationError`). ``"postgres"``: ``dsn`` (migrated first when ``migrate``) for scopes
    without a database of their own, and one pool per distinct scope ``dsn`` (never migrated: such a URL
    is an application role's, docs/security.md). Each scope is checked with one read of its default
    thread before serving, so a scope ``dsn`` that cannot be opened, a role bound to another tenant (PM016),
    or one without the grants, stops the server at start (:class:`ConfigurationError` naming the scope)
    instead of failing its calls.
    """
    from ..postgres import create_postgres_memory_stores

    if backend == "memory":
        if any(scope.dsn is not None for scope in scopes):
            raise ConfigurationError("a token names a dsn, but --backend memory has no database: use the postgres backend")
        yield {None: (create_memory_vector_store(dimensions), create_memory_working_store())}
        return
    async with AsyncExitStack() as stack:

        async def connect(url: str, migrate: bool) -> tuple[VectorStore, WorkingStore]:
            stores = await create_postgres_memory_stores(
                url, schema=schema, table=table, dimensions=dimensions, skip_migrations=not migrate
            )
            stack.push_async_callback(stores.close)
            return stores.vector_store, stores.working_store

        opened: dict[str | None, tuple[VectorStore, WorkingStore]] = {}
        if any(scope.dsn is None for scope in scopes):
            opened[None] = await connect(dsn, migrate)
        for url in dict.fromkeys(scope.dsn for scope in scopes if scope.dsn is not None):
            try:
                opened[url] = await connect(url, False)
            except PrismMemoryError as exc:
                names = ", ".join(scope.name for scope in scopes if scope.dsn == url)
                raise ConfigurationError(f"{names}: cannot open its dsn: {type(exc).__name__}: {exc}") from exc
        for scope in scopes:
            try:
                await opened[scope.dsn][0].count_by_thread(Scope(scope.tenant_id, scope.resource_id, scope.thread_id))
            except PrismMemoryError as exc:
                raise ConfigurationError(
                    f"{scope.name}: its database cannot serve tenant {scope.tenant_id!r}: {type(exc).__name__}: {exc}"
                ) from exc
        yield opened
