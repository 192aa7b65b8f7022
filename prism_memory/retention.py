"""Retention: the stored maximum age of a thread's or a resource's entries, and the sweeps that delete what has
expired. An entry is out of recall and export from the moment it expires (its ``expires_at``, or a stored
policy); a sweep deletes its body. They are methods of :class:`~prism_memory.memory.Memory`;
:mod:`prism_memory.lifecycle` orders their store and hook calls."""

from __future__ import annotations

from . import lifecycle
from .checks import check_bool
from .errors import LimitExceededError
from .export import decode_resource_cursor
from .lifecycle import DELETE_BATCH
from .memory_base import MemoryBase
from .types import ResourceErasure, RetentionPolicy, RetentionResult, check_int_option


class RetentionOperations(MemoryBase):
    """Retention policies of this memory's thread and resource, and the sweeps over them (part of
    :class:`~prism_memory.memory.Memory`)."""

    async def set_retention_policy(self, max_age_days: float | None, *, resource_wide: bool = False) -> None:
        """Store the maximum age (24-hour days, 0..36,500) of this thread's entries, or with ``resource_wide``
        of every entry of this memory's resource; ``None`` removes that policy.

        The policy is enforced at read time: from the next call on, recall,
        export and the context provider leave out an entry older than any
        policy that covers it (its thread's and its resource's; the stricter
        wins), and :meth:`apply_retention` (or :meth:`apply_resource_retention`)
        deletes it. Times come from the memory's clock (the server's for a
        tenant-bound role). Raises :class:`LimitExceededError` out of range and
        :class:`InvalidScopeError` for a thread policy on a memory without a thread.
        """
        check_bool(resource_wide, "resource_wide")
        _check_max_age(max_age_days)
        scope = self._resource_scope() if resource_wide else self._thread_scope()
        await self._config.vector_store.set_retention_policy(
            scope, None if max_age_days is None else float(max_age_days), now=self._config.now())

    async def retention_policy(self) -> RetentionPolicy:
        """The stored retention policies that cover this memory's entries: ``RetentionPolicy(resource_max_age_days,
        thread_max_age_days)`` (``None`` where none is stored; the thread's is ``None`` without a thread)."""
        return await self._config.vector_store.get_retention_policy(self._config.scope)

    async def apply_retention(
        self, max_age_days: float | None = None, max_entries: int | None = None, batch_size: int = DELETE_BATCH
    ) -> RetentionResult:
        """One bounded real-delete sweep of this thread.

        Deletes what has expired (its ``expires_at`` has passed, or it is
        older than a stored retention policy of the thread or resource allows:
        :meth:`set_retention_policy`) and, when given, entries created more
        than ``max_age_days`` (24-hour days) ago or beyond the newest
        ``max_entries`` by sequence; oldest first, at most ``batch_size``
        (1..64) per call, skipping entries under legal hold. Tombstones and
        ``on_invalidate`` come before the deletes, as in :meth:`forget`.
        Returns ``RetentionResult(deleted, scanned)``; call again while
        ``deleted`` > 0. (Expired entries are already out of recall and
        export; the sweep deletes their bodies.)
        """
        thread = self._thread_scope()
        check_int_option("batch_size", batch_size, 1, DELETE_BATCH)
        if max_entries is not None:
            check_int_option("max_entries", max_entries, 0, 2**31 - 1)
        _check_max_age(max_age_days)
        await self._writes.settle("apply_retention")
        return await lifecycle.apply_retention(self._config, thread, max_age_days, max_entries, batch_size)

    async def apply_resource_retention(self, cursor: str | None = None, batch_size: int = DELETE_BATCH) -> ResourceErasure:
        """The retention sweep over every thread of this memory's resource: :meth:`forget_resource` for the
        entries that have expired (their ``expires_at``, or the stored policies of their thread and resource), in
        bounded, resumable batches (tombstones as ``expired``, the hook, then the deletes; holds kept). As in
        :meth:`apply_retention`, it deletes only what has expired: entries derived from it are tombstoned and
        keep their bodies until they expire or are forgotten.
        Returns ``ResourceErasure(deleted, held, next_cursor)``; call again with ``next_cursor`` until ``None``."""
        check_int_option("batch_size", batch_size, 1, DELETE_BATCH)
        after = decode_resource_cursor(cursor)
        await self._writes.settle("apply_retention")
        return await lifecycle.forget_resource(self._config, after, batch_size, expired_only=True)


def _check_max_age(max_age_days: object) -> None:
    """``max_age_days`` must be ``None`` or a number of 24-hour days from 0 to 36,500, else :class:`LimitExceededError`."""
    if max_age_days is not None and (
        isinstance(max_age_days, bool) or not isinstance(max_age_days, (int, float)) or not 0 <= max_age_days <= 36500
    ):
        raise LimitExceededError(f"max_age_days must be a number from 0 to 36500, got {max_age_days!r}")
