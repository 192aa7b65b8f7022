"""The store contracts both backends implement (seed: "narrow Embedder and VectorStore contracts").

Each method is one atomic operation: it either applies completely or raises
and changes nothing. The Postgres adapter implements each as one call to a
versioned SQL function; the emulator implements the same rules in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from .types import ConsentChange, EntryRecord, MemoryRecord, RecallResult, Scope, WorkingMemoryRecord


@runtime_checkable
class VectorStore(Protocol):
    """Semantic-memory entries of threads: scoped recall behind the consent gate, and their lifecycle.

    Each method is one SQL function on Postgres (named in brackets). ``now``
    stamps writes (the store's clock when ``None``).
    """

    async def remember(
        self, scope: Scope, records: Sequence[EntryRecord], now: datetime | None = None
    ) -> tuple[int, list[str]]:
        """[remember_v1] Upsert ``records`` into ``scope``'s thread, all or nothing.

        Returns how many were written and the ids invalidated by the write
        (written entries that are invalid, and their lineage dependents).
        """
        ...

    async def recall(
        self,
        scope: Scope,
        query_embedding: Sequence[float],
        query_text: str,
        top_k: int,
        message_range: int,
        require_consent: bool = False,
        share_from_parent_thread_id: str | None = None,
        now: datetime | None = None,
    ) -> RecallResult:
        """[recall_v1] Top-``top_k`` injectable hits of the thread (and of live grants) by the default score, plus adjacent entries."""
        ...

    async def share_with(
        self,
        scope: Scope,
        child_resource_id: str,
        child_thread_id: str,
        source_ids: Sequence[str],
        expires_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int:
        """[share_with_v1] Grant (no ids: revoke) a child thread's read of ``source_ids`` of ``scope``'s thread."""
        ...

    async def invalidate(self, scope: Scope, ids: Sequence[str], reason: str, now: datetime | None = None) -> list[str]:
        """[invalidate_v1] Tombstone ``ids`` (1..64) and their lineage dependents; return every invalidated id."""
        ...

    async def purge(self, scope: Scope, ids: Sequence[str]) -> int:
        """[purge_v1] Delete the tombstoned, unheld bodies of ``ids``; return how many were deleted."""
        ...

    async def set_consent(
        self, scope: Scope, entry_id: str, change: ConsentChange, now: datetime | None = None
    ) -> tuple[MemoryRecord, list[str]]:
        """[set_consent_v1] Apply ``change``; return the record and the ids invalidated."""
        ...

    async def correct(
        self, scope: Scope, entry_id: str, text: str, embedding: Sequence[float], now: datetime | None = None
    ) -> tuple[MemoryRecord, list[str]]:
        """[correct_v1] Replace text and embedding; return the record and the dependents invalidated."""
        ...

    async def retention_candidates(
        self, scope: Scope, max_age_days: float | None, max_entries: int | None, batch_size: int, now: datetime | None = None
    ) -> list[tuple[str, bool]]:
        """[retention_candidates_v1] The next sweep's ``(entry_id, held)`` pairs, oldest first."""
        ...

    async def list_by_thread(
        self, scope: Scope, after: tuple[int, str] | None, limit: int, exportable: bool = False
    ) -> list[MemoryRecord]:
        """[list_entries_v1] At most ``limit`` (1..200) entries after the (sequence, id) cursor."""
        ...

    async def count_by_thread(self, scope: Scope) -> int:
        """[count_entries_v1] How many entries the thread holds."""
        ...

    async def reembed(
        self, scope: Scope, ids: Sequence[str], texts: Sequence[str], embeddings: Sequence[Sequence[float]]
    ) -> int:
        """[reembed_v1] New embeddings for entries whose text is still ``texts``; return how many were updated."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class WorkingStore(Protocol):
    """Versioned working-memory documents, resource- or thread-scoped."""

    async def get_working(self, scope: Scope) -> WorkingMemoryRecord | None: ...

    async def update_working(
        self, scope: Scope, data: dict[str, Any], expected_version: int | None
    ) -> WorkingMemoryRecord:
        """Replace the document; version + 1. Raises ``WorkingMemoryVersionConflict`` on a stale ``expected_version``."""
        ...

    async def close(self) -> None: ...
