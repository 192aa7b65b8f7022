"""What every group of a memory's calls builds on: the memory's checked configuration, its background-write
queue, and the checks of the scope a call works in.

:class:`~prism_memory.memory.Memory` is made of groups of calls, each a subclass of :class:`MemoryBase`:
working memory, remember, recall and delegation (:mod:`prism_memory.memory`); consent, correction, erasure
and export of a thread (:mod:`prism_memory.consent`); the whole resource (:mod:`prism_memory.resource`);
retention (:mod:`prism_memory.retention`). Each call checks its input, waits for the pending background
writes where it must see them (:meth:`WriteQueue.settle`), and hands the work to
:mod:`prism_memory.lifecycle` or to a store.
"""

from __future__ import annotations

from collections.abc import Mapping

from .config import MemoryConfig
from .errors import IdentityMismatchError, InvalidScopeError
from .types import Scope
from .write_queue import WriteQueue


class MemoryBase:
    """The state and the scope checks that every group of :class:`~prism_memory.memory.Memory`'s calls shares.

    Not used on its own: build a memory with :func:`~prism_memory.memory.create_memory`.
    """

    def __init__(self, config: MemoryConfig) -> None:
        """A memory over ``config``, which :func:`~prism_memory.memory.create_memory` built and checked (or
        :meth:`Memory.child` derived); a hand-built :class:`MemoryConfig` is not checked again."""
        self._config = config
        self._writes = WriteQueue()

    @property
    def config(self) -> MemoryConfig:
        """What :func:`~prism_memory.memory.create_memory` checked (or, for a :meth:`Memory.child`, derived), frozen:
        ``config.scope`` (the memory's tenant, resource and thread), ``config.embedder``, ``config.vector_store``,
        ``config.working_store``, ``config.limits``, ``config.require_consent`` and the rest of :class:`MemoryConfig`."""
        return self._config

    @property
    def failed_writes(self) -> int:
        """How many background ``remember`` calls failed since the last :meth:`flush`, which re-raises the first.

        No other call raises such a failure or is refused because of it (each was also logged as an error
        on the ``prism_memory`` logger when it happened).
        """
        return self._writes.failed

    async def flush(self) -> None:
        """Wait for background ``remember`` calls; re-raise the first failure since the last flush.

        This is where a failed background write is reported (its own error type, e.g.
        :class:`InvalidEmbeddingError` or :class:`EmbeddingFailedError`); once raised, :attr:`failed_writes`
        is 0 again. The calls that wait for background writes (``recall``, ``forget`` ...) never raise it.
        """
        await self._writes.flush()

    async def close(self) -> None:
        """Finish pending writes (errors are logged, not raised) and close both stores."""
        await self._writes.close()
        await self._config.vector_store.close()
        if self._config.working_store is not self._config.vector_store:
            await self._config.working_store.close()

    def _thread_scope(self) -> Scope:
        """This memory's scope; :class:`InvalidScopeError` when it has no thread (semantic operations need one)."""
        if self._config.scope.thread_id is None:
            raise InvalidScopeError("this memory has no thread_id; semantic operations need one")
        return self._config.scope

    def _resource_scope(self) -> Scope:
        """This memory's tenant and resource, without a thread: the scope of a call on the whole resource."""
        return Scope(self._config.scope.tenant_id, self._config.scope.resource_id)

    def _check_identity(self, identity: Scope | Mapping[str, str], resource_wide: bool = False) -> None:
        """``identity`` must be exactly this memory's scope, or with ``resource_wide`` its tenant and resource with
        no thread; else :class:`IdentityMismatchError`."""
        if isinstance(identity, Mapping):
            unknown = set(identity) - {"tenant_id", "resource_id", "thread_id"}
            if unknown:
                raise IdentityMismatchError(f"identity has unknown fields {sorted(unknown)}")
            identity = Scope(identity.get("tenant_id"), identity.get("resource_id"), identity.get("thread_id"))
        if not isinstance(identity, Scope):
            raise IdentityMismatchError("identity must be a Scope or a mapping of tenant_id, resource_id, thread_id")
        if resource_wide and identity != self._resource_scope():
            raise IdentityMismatchError(
                "the identity is not exactly this memory's tenant and resource (without a thread: the request is "
                "for the whole resource)")
        if not resource_wide and identity != self._config.scope:
            raise IdentityMismatchError("the export identity is not exactly this memory's tenant, resource and thread")
