"""The emulator's reads of one thread: ``list_entries_v3`` and ``count_entries_v1``."""

from __future__ import annotations

from datetime import datetime

from ..checks import check_now, scope_texts
from ..selection import check_selection, selects
from ..store_arguments import page_arguments
from ..types import MemoryRecord, RecallSelection, Scope, check_int_option
from .state import EmulatorState, by_sequence


class ReadOperations(EmulatorState):
    """``list_by_thread`` and ``count_by_thread`` of :class:`prism_memory.stores.VectorStore`."""

    async def list_by_thread(
        self, scope: Scope, after: tuple[int, str] | None, limit: int, exportable: bool = False,
        now: datetime | None = None, selection: RecallSelection | None = None,
    ) -> list[MemoryRecord]:
        """Mirror of ``list_entries_v3``: entries ``selection`` keeps after the (sequence, id) cursor, at most
        ``limit`` (1..200, else :class:`LimitExceededError`); ``exportable``: only visible and live ones."""
        scope_texts(scope)
        after = page_arguments(after, limit, exportable)
        now = check_now(now)
        selection = check_selection(selection)  # recall_selection_v1, in the function's declare
        key = self._key(scope)
        check_int_option("limit", limit, 1, 200)
        chosen = [
            row
            for row in by_sequence(self._threads.get(key, {}))
            if (after is None or (row.sequence, row.id) > after)
            and (not exportable or (self._visible(key, row, True) and self._live(key, row, now)))
            and selects(selection, row.metadata, row.occurred_at, row.created_at)
        ]
        return [row.record()[0] for row in chosen[:limit]]

    async def count_by_thread(self, scope: Scope) -> int:
        """Mirror of ``count_entries_v1``: the thread's entries, tombstoned ones included."""
        scope_texts(scope)
        return len(self._threads.get(self._key(scope), {}))
