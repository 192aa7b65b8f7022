"""The calls on a thread's entries that answer to their user: consent (grant and revoke), correction,
erasure and legal hold, and export (docs/consent-and-lifecycle.md). They are methods of
:class:`~prism_memory.memory.Memory`; :mod:`prism_memory.lifecycle` orders their store and hook calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from . import lifecycle
from .checks import MAX_ENTRY_ID_BYTES, check_bool, check_id
from .entry_checks import check_consent_change, check_entry
from .errors import InvalidEntryError, LimitExceededError
from .export import EXPORT_LIMITS, check_export_caps, decode_cursor
from .lifecycle import DELETE_BATCH
from .memory_base import MemoryBase
from .selection import select
from .types import ConsentChange, ExportPage, ForgetResult, MemoryEntry, MemoryRecord, Scope


class ConsentOperations(MemoryBase):
    """Consent, correction, erasure, legal hold and export of this memory's thread (part of
    :class:`~prism_memory.memory.Memory`)."""

    async def set_consent(
        self,
        entry_id: str,
        *,
        visible: bool | None = None,
        source: str | None = None,
        scope: str | None = None,
        granted_at: datetime | None = None,
        revoked_at: datetime | None = None,
    ) -> MemoryRecord:
        """Grant or revoke consent on one entry without re-embedding.

        ``None`` leaves a field unchanged. ``visible=False`` (or a
        ``revoked_at``) revokes: the entry and its lineage dependents are
        invalidated before the consent changes, then ``on_invalidate`` runs.
        ``visible=True`` grants again (dependents stay invalidated). Returns the
        updated record. Raises :class:`EntryNotFoundError` for an unknown id,
        :class:`InvalidEntryError` for bad values or naive datetimes, and
        :class:`LineageLimitError` over the walk caps (nothing changes).
        """
        thread = self._thread_scope()
        change = check_consent_change(ConsentChange(visible, source, scope, granted_at, revoked_at))
        await self._writes.settle("set_consent")
        return await lifecycle.set_consent(self._config, thread, _entry_id(entry_id), change)

    async def correct(self, entry_id: str, text: str) -> MemoryRecord:
        """Replace an entry's text (redacted, re-embedded), keeping its consent.

        The entry's lineage is marked ``corrected`` and its dependents are
        invalidated (the entry itself stays), then ``on_invalidate`` runs.
        Raises :class:`EntryNotFoundError`, :class:`InvalidEntryError` for a
        blank text, :class:`PayloadTooLargeError` over ``limits.entry_bytes``.
        """
        thread = self._thread_scope()
        entry_id = _entry_id(entry_id)
        item = self._config.redaction.entry(MemoryEntry(entry_id, text), 1)
        check_entry(item, 1, self._config.limits.entry_bytes)
        await self._writes.settle("correct")
        return await lifecycle.correct(self._config, thread, entry_id, item.text)

    async def forget(self, ids: Sequence[str], hold: bool = False, erase_derived: bool = False) -> ForgetResult:
        """Really delete entries, or put them under legal hold.

        ``ids``: 1 to 64 entry ids (one delete batch). First the
        entries and their lineage dependents are tombstoned, then
        ``on_invalidate`` runs, then the bodies are deleted. Returns a
        :class:`ForgetResult`: an ``int``, how many bodies were deleted, whose
        ``kept`` names the ids a ``remember`` stored again while the forget ran
        (kept as written; every other id is still forgotten) and ``not_found``
        the ids that named no entry of this thread. No lineage stops
        it: the walk goes in bounded steps, as many as the lineage needs
        (docs/consent-and-lifecycle.md). With ``erase_derived=True`` the bodies of the dependents
        (entries derived from the forgotten ones, transitively, e.g. a summary
        quoting a deleted fact) are deleted too, not only tombstoned. With
        ``hold=True`` nothing is deleted (returns 0): the entries are kept under
        legal hold, excluded from recall and export, and skipped by retention.
        Entries under hold are never deleted. A revoked entry is not held: it is
        deleted. What an erasure leaves behind: each erased entry's tombstone
        (its id, the reason, the id that caused it, its sequence), so its
        sequence is never reused and an entry derived from it stays invalid
        (docs/consent-and-lifecycle.md). Raises :class:`LimitExceededError` for
        more than 64 ids.
        """
        thread = self._thread_scope()
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise InvalidEntryError("forget needs a list of entry ids")
        unique = list(dict.fromkeys(_entry_id(entry_id) for entry_id in ids))
        if not 1 <= len(unique) <= DELETE_BATCH:
            raise LimitExceededError(f"forget takes 1 to {DELETE_BATCH} ids per call, got {len(unique)}")
        for name, flag in (("hold", hold), ("erase_derived", erase_derived)):
            check_bool(flag, name)
        await self._writes.settle("forget")
        return await lifecycle.forget(self._config, thread, unique, hold, erase_derived)

    async def export_memory(
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
        """One page of this thread's exportable records.

        ``identity`` (a :class:`Scope` or a mapping of ``tenant_id``,
        ``resource_id``, ``thread_id``) must equal this memory's scope exactly,
        else :class:`IdentityMismatchError`. A page holds explicitly consented,
        visible, unrevoked, unheld, not invalidated entries, redacted, in
        (sequence, id) order: at most ``limit`` (default 100, cap 200) and
        ``max_bytes`` of JSON (default 4 MiB, cap 32 MiB; the first record
        always fits), read within ``max_ms`` (default 10 s, cap 60 s, else
        :class:`OperationTimeoutError`). Pass ``next_cursor`` back for the
        next page; it is ``None`` after the last. ``filter`` and the windows
        keep the records :meth:`Memory.recall` would consider with them, inside
        the database (pass them again with each page's cursor);
        :class:`InvalidFilterError` or :class:`InvalidQueryError` when bad.
        """
        thread = self._thread_scope()
        self._check_identity(identity)
        check_export_caps(limit, max_bytes, max_ms)
        after = decode_cursor(cursor)
        selection = select(filter, occurred_after, occurred_before, created_after, created_before)
        await self._writes.settle("export_memory")
        return await lifecycle.export_memory(self._config, thread, after, limit, max_bytes, max_ms, selection)


def _entry_id(entry_id: object) -> str:
    """``entry_id`` if it is an entry id (non-blank, at most 512 UTF-8 bytes), else :class:`InvalidEntryError`."""
    return check_id(entry_id, "entry id", MAX_ENTRY_ID_BYTES, InvalidEntryError)
