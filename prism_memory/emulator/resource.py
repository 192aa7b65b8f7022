"""The emulator's resource-wide operations: every thread of a tenant's resource at once
(``list_resource_entries_v1``, ``count_resource_entries_v1``, ``invalidate_resource_v1``, ``purge_resource_v1``).

The batch operations apply the lifecycle group's ``invalidate`` and ``purge`` thread by thread, all or nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..checks import check_bool, check_int, check_now, check_scope, scope_texts
from ..errors import LimitExceededError
from ..selection import check_selection, selects
from ..store_arguments import resource_cursor_arguments, resource_entry_arguments
from ..types import MemoryRecord, RecallSelection, Scope, check_int_option
from .state import EmulatorState, EntryRow, ThreadKey, by_sequence


class ResourceOperations(EmulatorState):
    """``list_by_resource``, ``count_by_resource``, ``invalidate_resource`` and ``purge_resource`` of
    :class:`prism_memory.stores.VectorStore`."""

    def _resource_batch(
        self, scope: Scope, after: tuple[str, int, str] | None, limit: int, most: int, flag: tuple[str, bool],
        now: datetime | None,
    ) -> tuple[list[tuple[ThreadKey, EntryRow]], datetime]:
        """The checks ``list_resource_entries_v1`` and ``invalidate_resource_v1`` share, in their order (Python's
        types, then the scope, the cursor and ``limit`` in 1..``most``, :class:`LimitExceededError`); returns the
        rows after the cursor (:meth:`_resource_rows`) and the clock. ``flag``: the call's bool (name, value)."""
        scope_texts(scope)
        after = resource_cursor_arguments(after)
        check_int(limit, "limit", LimitExceededError, bits=32)
        check_bool(flag[1], flag[0])
        checked_now = check_now(now)
        rows = self._resource_rows(scope, after)
        check_int_option("limit", limit, 1, most)
        return rows, checked_now

    def _resource_rows(self, scope: Scope, after: tuple[str, int, str] | None) -> list[tuple[ThreadKey, EntryRow]]:
        """The rows of every thread of ``scope``'s tenant and resource after the cursor, in (thread, sequence, id)
        order, after the checks of ``assert_scope_v2`` (tenant and resource only) and ``assert_resource_cursor_v1``
        (:class:`LimitExceededError` for a cursor with a blank thread or id)."""
        check_scope(Scope(scope.tenant_id, scope.resource_id), thread_required=False)
        if after is not None and (not after[0].strip() or not after[2].strip()):
            raise LimitExceededError("a resource cursor is (thread_id, sequence, id), all given or none")
        threads = sorted(key for key in self._threads if key[:2] == (scope.tenant_id, scope.resource_id))
        return [(key, row) for key in threads for row in by_sequence(self._threads[key])
                if after is None or (key[2], row.sequence, row.id) > after]

    async def list_by_resource(
        self, scope: Scope, after: tuple[str, int, str] | None, limit: int, exportable: bool = False,
        now: datetime | None = None, selection: RecallSelection | None = None,
    ) -> list[MemoryRecord]:
        """Mirror of ``list_resource_entries_v2``: the resource's entries ``selection`` keeps after the (thread,
        sequence, id) cursor, at most ``limit`` (1..200), each naming its thread; ``exportable``: only visible and
        live ones."""
        selection = check_selection(selection)  # recall_selection_v1, in the function's declare
        rows, now = self._resource_batch(scope, after, limit, 200, ("exportable", exportable), now)
        chosen = [row.record(thread_id=key[2])[0] for key, row in rows
                  if (not exportable or (self._visible(key, row, True) and self._live(key, row, now)))
                  and selects(selection, row.metadata, row.occurred_at, row.created_at)]
        return chosen[:limit]

    async def count_by_resource(self, scope: Scope) -> int:
        """Mirror of ``count_resource_entries_v1``: the entries of every thread of the resource."""
        scope_texts(scope)
        check_scope(Scope(scope.tenant_id, scope.resource_id), thread_required=False)
        return sum(len(rows) for key, rows in self._threads.items() if key[:2] == (scope.tenant_id, scope.resource_id))

    async def invalidate_resource(
        self, scope: Scope, after: tuple[str, int, str] | None, limit: int, expired_only: bool = False,
        now: datetime | None = None,
    ) -> list[tuple[str, str, int, bool, bool]]:
        """Mirror of ``invalidate_resource_v1``: the next batch (of expired entries, ``expired_only``) tombstoned
        thread by thread (``erase_walk``, reason 'deleted' or 'expired', held entries skipped), all or nothing.
        Returns (thread, id, sequence, held, in the batch) for the batch's entries (1..64), in cursor order, then the
        lineage dependents the walk reached beyond it."""
        rows, now = self._resource_batch(scope, after, limit, 64, ("expired_only", expired_only), now)
        picked = [(key, row) for key, row in rows if not expired_only or not self._live(key, row, now)][:limit]
        by_thread: dict[ThreadKey, list[str]] = {}
        for key, row in picked:
            if not row.legal_hold:
                by_thread.setdefault(key, []).append(row.id)
        reached: list[tuple[ThreadKey, str]] = []
        with self._restored_on_error(list(by_thread)):
            for key in sorted(by_thread):
                thread = Scope(*key)
                reason = "expired" if expired_only else "deleted"
                tombstoned, _pending = await self.erase_walk(thread, by_thread[key], reason, now)
                reached += [(key, entry_id) for entry_id in tombstoned]
        result = [(key[2], row.id, row.sequence, row.legal_hold, True) for key, row in picked]
        seen = {(key, row.id) for key, row in picked}
        others = sorted({(key, entry_id) for key, entry_id in reached if (key, entry_id) not in seen},
                        key=lambda item: (item[0][2], self._threads[item[0]][item[1]].sequence, item[1]))
        return result + [(key[2], entry_id, self._threads[key][entry_id].sequence,
                          self._threads[key][entry_id].legal_hold, False) for key, entry_id in others]

    async def purge_resource(self, scope: Scope, entries: Sequence[tuple[str, str]]) -> int:
        """Mirror of ``purge_resource_v1``: ``purge`` thread by thread (in code-point order), all or nothing. Returns
        how many were deleted; 1..64 (thread, id) pairs (:class:`LimitExceededError`)."""
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
