"""The emulator's working store: one versioned JSON document per tenant, resource and thread
(``get_working_v1``, ``update_working_v1``).

Each call first yields to the event loop, as a round trip to Postgres does, so concurrent read-then-write
callers (working-memory processors) interleave as they do on Postgres. Documents are stored as their JSON,
like ``jsonb``.
"""

from __future__ import annotations

import asyncio
import copy
from datetime import datetime, timezone
from typing import Any

from ..checks import check_int, check_scope
from ..errors import LimitExceededError, PayloadTooLargeError, WorkingMemoryValidationError, WorkingMemoryVersionConflict
from ..jsoncodec import json_document, load_json
from ..types import Scope, WorkingMemoryRecord
from .rules import STORE_WORKING_MEMORY_BYTES


def _now() -> datetime:
    return datetime.now(timezone.utc)


async def _round_trip() -> None:
    """Let other tasks run first, as a Postgres call's round trip does: concurrent callers then interleave
    between one call and the next (a working-memory read and the conditional write after it) as they do on
    Postgres, and never inside a call, which still runs without awaiting."""
    await asyncio.sleep(0)


class EmulatorWorkingStore:
    """In-memory :class:`prism_memory.stores.WorkingStore`: the records live in this object only."""

    def __init__(self) -> None:
        self._records: dict[tuple[str, str, str], WorkingMemoryRecord] = {}

    async def get_working(self, scope: Scope) -> WorkingMemoryRecord | None:
        """Mirror of ``get_working_v1``, after a round trip (:func:`_round_trip`): a copy of the scope's record, or
        ``None``. The thread is optional (without it, the resource's record)."""
        check_scope(scope, thread_required=False)
        await _round_trip()
        record = self._records.get((scope.tenant_id, scope.resource_id, scope.thread_id or ""))
        return None if record is None else copy.deepcopy(record)

    async def update_working(
        self, scope: Scope, data: dict[str, Any], expected_version: int | None
    ) -> WorkingMemoryRecord:
        """Mirror of ``update_working_v1`` after a round trip (:func:`_round_trip`): version + 1, or
        :class:`WorkingMemoryVersionConflict` when ``expected_version`` is not the current one (0: none yet).
        :class:`PayloadTooLargeError` over 8 MiB of JSON, :class:`LimitExceededError` for a negative version."""
        check_scope(scope, thread_required=False)
        document = json_document(data, "working memory", WorkingMemoryValidationError)
        if len(document.encode("utf-8")) > STORE_WORKING_MEMORY_BYTES:
            raise PayloadTooLargeError("working memory is over the 8 MiB hard cap of the store")
        if expected_version is not None and check_int(expected_version, "expected_version", LimitExceededError) < 0:
            raise LimitExceededError(f"expected_version must be >= 0, got {expected_version}")
        await _round_trip()
        key = (scope.tenant_id, scope.resource_id, scope.thread_id or "")
        current = self._records.get(key)
        current_version = current.version if current else 0
        if expected_version is not None and expected_version != current_version:
            raise WorkingMemoryVersionConflict(
                f"working memory is at version {current_version}, expected {expected_version}"
            )
        now = _now()
        record = WorkingMemoryRecord(
            tenant_id=scope.tenant_id,
            resource_id=scope.resource_id,
            thread_id=scope.thread_id,
            data=load_json(document),
            version=current_version + 1,
            created_at=current.created_at if current else now,
            updated_at=now,
        )
        self._records[key] = record
        return copy.deepcopy(record)

    async def close(self) -> None:
        """Nothing to release; kept for the store contract."""


def create_memory_working_store() -> EmulatorWorkingStore:
    """Create the in-memory working store (the default when ``create_memory`` gets none)."""
    return EmulatorWorkingStore()
