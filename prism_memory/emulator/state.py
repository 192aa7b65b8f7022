"""What the emulator's entry tables hold, and the per-row rules every operation group reads.

:class:`EmulatorState` is the base of each operation group's class (writes,
recall, lifecycle, sharing, resource-wide, reads), which
:class:`prism_memory.emulator.store.EmulatorVectorStore` composes. Its
dictionaries stand for the SQL tables; its methods are the rules more than
one group applies: the scope key, the width rule (``assert_dimensions_v2``),
the injectable-and-not-tombstoned gate, expiry (``is_live_v2``,
``retention_cutoff_v1``), and all-or-nothing over several threads.

Every operation runs without awaiting in between, so it is atomic under asyncio.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from ..checks import check_scope
from ..errors import DimensionMismatchError
from ..types import MemoryConsent, MemoryRecord, Scope, check_int_option

#: No expiry: later than every time (``'infinity'`` in SQL).
NEVER = datetime.max.replace(tzinfo=timezone.utc)
#: (tenant, resource, thread): one thread's rows; thread '' stands for the resource in the retention policies.
ThreadKey = tuple[str, str, str]
#: (tenant, parent resource, parent thread, child resource, child thread): one share grant.
GrantKey = tuple[str, str, str, str, str]


@dataclass(slots=True)
class EntryRow:
    """One entry, with the columns of the entries table (consent unset = legacy)."""

    id: str
    text: str
    metadata: dict[str, Any]
    embedding: np.ndarray  # float32, as pgvector stores it
    norm_squared: float
    terms: frozenset[str]
    sequence: int
    importance: float | None
    consent_source: str | None
    consent_scope: str | None
    consent_visible: bool
    consent_granted_at: datetime | None
    consent_revoked_at: datetime | None
    legal_hold: bool
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    #: the oldest created_at and the earliest expires_at among its stored lineage sources, transitively
    #: (``lineage_expiry_v1``; ``None``: no stored source, none that expires)
    sources_created_at: datetime | None = None
    sources_expire_at: datetime | None = None
    #: when the thing it tells of happened (``None``: its ``created_at``)
    occurred_at: datetime | None = None

    def lineage_times(self) -> tuple[datetime, datetime]:
        """The oldest created_at and the earliest expiry of the entry and its sources (:data:`NEVER`: none
        expires): what ``is_live_v2`` compares."""
        created = self.created_at if self.sources_created_at is None else min(self.created_at, self.sources_created_at)
        expiries = [when for when in (self.expires_at, self.sources_expire_at) if when is not None]
        return created, min(expiries, default=NEVER)

    def consented(self, require_consent: bool) -> bool:
        """Visible, not revoked, and explicitly consented when ``require_consent``."""
        return self.consent_visible and self.consent_revoked_at is None and (not require_consent or self.consent_source is not None)

    def injectable(self, require_consent: bool) -> bool:
        """Mirror of ``is_injectable_v1``: consented and not under legal hold."""
        return self.consented(require_consent) and not self.legal_hold

    def record(self, invalidated: Sequence[str] = (), thread_id: str | None = None) -> tuple[MemoryRecord, list[str]]:
        """The row as a :class:`MemoryRecord` (metadata deep-copied; ``thread_id`` named for resource-wide
        reads), with ``invalidated`` as a list: the pair the lifecycle operations return."""
        consent = (
            None
            if self.consent_source is None
            else MemoryConsent(
                self.consent_source, self.consent_scope, self.consent_visible, self.consent_granted_at, self.consent_revoked_at
            )
        )
        record = MemoryRecord(
            id=self.id, text=self.text, metadata=copy.deepcopy(self.metadata), sequence=self.sequence,
            importance=self.importance, consent=consent, legal_hold=self.legal_hold, created_at=self.created_at,
            updated_at=self.updated_at, thread_id=thread_id, occurred_at=self.created_at if self.occurred_at is None else self.occurred_at,
        )
        return record, list(invalidated)


def by_sequence(rows: dict[str, EntryRow]) -> list[EntryRow]:
    """A thread's rows in (sequence, id) order, ids in code-point order as ``collate "C"``."""
    return sorted(rows.values(), key=lambda row: (row.sequence, row.id))


class EmulatorState:
    """The emulator's entry tables and the rules every operation group shares.

    ``dimensions`` pins the embedding width like ``vector(N)`` (1..16,000,
    else :class:`~prism_memory.errors.LimitExceededError`); unpinned, the
    first entry of a thread fixes its width.
    """

    def __init__(self, dimensions: int | None = None) -> None:
        if dimensions is not None:
            check_int_option("dimensions", dimensions, 1, 16000)
        self.dimensions = dimensions
        #: thread -> entry id -> row: the entries table
        self._threads: dict[ThreadKey, dict[str, EntryRow]] = {}
        #: thread -> entry id -> (reason, sequence of the entry when tombstoned): the invalidation table
        self._tombstones: dict[ThreadKey, dict[str, tuple[str, int | None]]] = {}
        #: grant -> (the ids it names, when it expires or None): the share_grant table
        self._grants: dict[GrantKey, tuple[frozenset[str], datetime | None]] = {}
        #: thread -> (model id, width) of its embedder: the embedding_model table
        self._models: dict[ThreadKey, tuple[str, int]] = {}
        #: (tenant, resource, thread or '' for the resource) -> maximum age in days: the retention_policy table
        self._policies: dict[ThreadKey, float] = {}
        #: thread -> the entry ids whose tombstone is pending (an erasure's walk to continue): the invalidation
        #: table's pending column
        self._pending: dict[ThreadKey, set[str]] = {}

    @staticmethod
    def _key(scope: Scope) -> ThreadKey:
        """Mirror of ``assert_scope_v2`` with a thread required; the scope's thread key."""
        check_scope(scope, thread_required=True)
        return (scope.tenant_id, scope.resource_id, scope.thread_id or "")

    def _expected_dimensions(self, rows: dict[str, EntryRow]) -> int | None:
        if self.dimensions is not None:
            return self.dimensions
        for row in rows.values():
            return int(row.embedding.shape[0])
        return None

    def _check_dimensions(self, rows: dict[str, EntryRow], width: int) -> None:
        """Mirror of ``assert_dimensions_v2``: ``width`` must be the pinned one, or that of the thread's
        ``rows``, else :class:`DimensionMismatchError`."""
        expected = self._expected_dimensions(rows)
        if expected is not None and width != expected:
            raise DimensionMismatchError(f"embedding has {width} dimensions, expected {expected}")

    def _visible(self, key: ThreadKey, row: EntryRow, require_consent: bool) -> bool:
        """Injectable (``is_injectable_v1``) and not tombstoned in thread ``key``."""
        return row.injectable(require_consent) and row.id not in self._tombstones.get(key, {})

    def _cutoff(self, key: ThreadKey, now: datetime) -> datetime | None:
        """Mirror of ``retention_cutoff_v1`` for the thread ``key`` (``None``: no policy covers it)."""
        ages = [self._policies[policy] for policy in ((*key[:2], ""), key) if policy in self._policies]
        return now - timedelta(days=min(ages)) if ages else None

    def _live(self, key: ThreadKey, row: EntryRow, now: datetime) -> bool:
        """Mirror of ``is_live_v2``: neither the entry nor a lineage source of it (transitively) is older than the
        policies of ``key`` allow, and the earliest of their expiries is still ahead."""
        cutoff = self._cutoff(key, now)
        created, expires = row.lineage_times()
        return (cutoff is None or created >= cutoff) and expires > now

    @contextlib.contextmanager
    def _restored_on_error(self, keys: Sequence[ThreadKey]) -> Iterator[None]:
        """All or nothing, as one SQL transaction: on an error, the threads ``keys`` get their rows and tombstones back.

        Writes replace rows rather than change them, so shallow copies suffice.
        """
        saved = [(key, dict(self._threads.get(key, {})), dict(self._tombstones.get(key, {})),
                  set(self._pending.get(key, ()))) for key in keys]
        grants = dict(self._grants)
        try:
            yield
        except BaseException:
            for key, rows, tombstones, pending in saved:
                self._threads[key], self._tombstones[key], self._pending[key] = rows, tombstones, pending
            self._grants = grants
            raise
