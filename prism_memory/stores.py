"""The store contracts both backends implement (seed: "narrow Embedder and VectorStore contracts").

Each method is one atomic operation: it either applies completely or raises
and changes nothing. The Postgres adapter implements each as one call to a
versioned SQL function; the emulator implements the same rules in Python.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .types import EntryRecord, RecallResult, Scope, WorkingMemoryRecord


@runtime_checkable
class VectorStore(Protocol):
    """Semantic-memory entries of threads, with scoped recall."""

    async def remember(self, scope: Scope, records: Sequence[EntryRecord]) -> int:
        """Upsert ``records`` into ``scope``'s thread, all or nothing; return how many were written."""
        ...

    async def recall(
        self, scope: Scope, query_embedding: Sequence[float], query_text: str, top_k: int, message_range: int
    ) -> RecallResult:
        """Top-``top_k`` hits of the thread by the default score, plus adjacent entries."""
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
