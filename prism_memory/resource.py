"""The calls on every thread of a memory's resource: count, export and erase ("delete all of user X"). They
are methods of :class:`~prism_memory.memory.Memory` (docs/consent-and-lifecycle.md, "The whole resource");
:mod:`prism_memory.lifecycle` orders their store and hook calls."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from . import lifecycle
from .export import EXPORT_LIMITS, check_export_caps, decode_resource_cursor
from .lifecycle import DELETE_BATCH
from .memory_base import MemoryBase
from .selection import select
from .types import ExportPage, ResourceErasure, Scope, check_int_option


class ResourceOperations(MemoryBase):
    """Count, export and erase everything of this memory's tenant and resource, across its threads (part of
    :class:`~prism_memory.memory.Memory`)."""

    async def count_resource(self) -> int:
        """How many entries every thread of this memory's tenant and resource holds (stored bodies: tombstoned,
        held and expired ones not yet swept included). Another resource, a delegated agent's derived one
        included, is never counted. Waits for this memory's pending writes first."""
        await self._writes.settle("count_resource")
        return await self._config.vector_store.count_by_resource(self._config.scope)

    async def export_resource(
        self,
        identity: Scope | Mapping[str, str],
        cursor: str | None = None,
        limit: int = EXPORT_LIMITS["limit"][0],
        max_bytes: int = EXPORT_LIMITS["max_bytes"][0],
        max_ms: int = EXPORT_LIMITS["max_ms"][0],
        *,
        filter: dict[str, Any] | None = None,
        occurred_after: datetime | None = None,
        occurred_before: datetime | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
    ) -> ExportPage:
        """One page of everything exportable of this memory's resource, across all its threads.

        :meth:`export_memory` for the whole resource: ``identity`` (a
        :class:`Scope` without a thread, or a mapping of ``tenant_id`` and
        ``resource_id``) must be exactly this memory's tenant and resource,
        else :class:`IdentityMismatchError` (a thread in it is refused: the
        request is for every thread). Records come in (thread, sequence, id)
        order, code-point order for the texts, each with its ``thread_id``;
        the same gate, caps, redaction and byte cut as :meth:`export_memory`.
        Pass ``next_cursor`` back for the next page (``None`` after the
        last); a thread's cursor is refused (:class:`InvalidCursorError`).
        ``filter`` and the windows select as in :meth:`export_memory`.
        """
        self._check_identity(identity, resource_wide=True)
        check_export_caps(limit, max_bytes, max_ms)
        after = decode_resource_cursor(cursor)
        selection = select(filter, occurred_after, occurred_before, created_after, created_before)
        await self._writes.settle("export_resource")
        return await lifecycle.export_resource(self._config, after, limit, max_bytes, max_ms, selection)

    async def forget_resource(
        self, identity: Scope | Mapping[str, str], cursor: str | None = None, batch_size: int = DELETE_BATCH
    ) -> ResourceErasure:
        """Erase everything this memory's resource holds, one bounded, resumable batch per call ("delete all of
        user X").

        ``identity`` is checked as in :meth:`export_resource`. Each call takes
        the next ``batch_size`` (1..64) entries of all the resource's threads
        after ``cursor`` in (thread, sequence, id) order, tombstones them and
        their lineage dependents, runs ``on_invalidate`` once per thread
        (with that thread's ids), then deletes their bodies and the
        dependents' (as :meth:`forget` with ``erase_derived=True``). Entries
        under legal hold are kept and counted in ``held``. Returns
        ``ResourceErasure(deleted, held, next_cursor)``: call again with
        ``next_cursor`` until it is ``None``. Entries written into the
        resource while the erasure runs may be passed by the cursor: check
        :meth:`count_resource` afterwards, or run it again from the start.
        No lineage stops it: each batch's walk over the dependents is bounded
        and resumable, and is finished before the batch's deletes.
        """
        self._check_identity(identity, resource_wide=True)
        check_int_option("batch_size", batch_size, 1, DELETE_BATCH)
        after = decode_resource_cursor(cursor)
        await self._writes.settle("forget_resource")
        return await lifecycle.forget_resource(self._config, after, batch_size)
