"""Export paging (``export_memory``, ``export_resource``, ``rebuild_index``): the page caps and their check, the
cursor codecs (one thread's, which export and rebuild share, and a resource's, which ``export_resource`` and
``forget_resource`` share), the export JSON of a record, and how an export page is cut to its byte cap."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from .errors import InvalidCursorError
from .types import ExportPage, MemoryRecord, check_int_option

#: Export page: default and hard cap of entries, bytes and milliseconds.
EXPORT_LIMITS = {"limit": (100, 200), "max_bytes": (4 * 1024 * 1024, 32 * 1024 * 1024), "max_ms": (10_000, 60_000)}
#: Rebuild page: default and hard cap of entries and milliseconds.
REBUILD_LIMITS = {"batch_size": (32, 128), "max_ms": (10_000, 60_000)}


def check_export_caps(limit: int, max_bytes: int, max_ms: int) -> None:
    """An export page's caps: ``limit`` records, ``max_bytes`` bytes of JSON and ``max_ms`` milliseconds, each from
    1 to its hard cap in :data:`EXPORT_LIMITS`, else :class:`LimitExceededError`."""
    check_int_option("limit", limit, 1, EXPORT_LIMITS["limit"][1])
    check_int_option("max_bytes", max_bytes, 1, EXPORT_LIMITS["max_bytes"][1])
    check_int_option("max_ms", max_ms, 1, EXPORT_LIMITS["max_ms"][1])


def encode_cursor(sequence: int, entry_id: str) -> str:
    """The stable cursor after the entry at (``sequence``, ``entry_id``): ``c1.`` + base64url JSON."""
    payload = json.dumps([sequence, entry_id], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return "c1." + base64.urlsafe_b64encode(payload).decode("ascii")


def decode_cursor(cursor: str | None) -> tuple[int, str] | None:
    """The (sequence, id) a cursor points after; ``None`` for the start.

    Raises :class:`InvalidCursorError` for anything :func:`encode_cursor` did
    not make: another version prefix, bad base64 or JSON, a sequence outside
    a signed 64-bit integer, an id with a NUL or over 512 UTF-8 bytes.
    """
    if cursor is None:
        return None
    try:
        if not isinstance(cursor, str) or not cursor.startswith("c1."):
            raise ValueError("unknown cursor version")
        sequence, entry_id = json.loads(base64.urlsafe_b64decode(cursor[3:].encode("ascii")))
        if isinstance(sequence, bool) or not isinstance(sequence, int) or not -(2**63) <= sequence < 2**63:
            raise ValueError("malformed cursor sequence")
        if not isinstance(entry_id, str) or "\x00" in entry_id or len(entry_id.encode("utf-8")) > 512:
            raise ValueError("malformed cursor id")
    except (ValueError, TypeError, RecursionError, binascii.Error, UnicodeError) as exc:
        raise InvalidCursorError(f"not a prism-memory cursor: {str(cursor)[:80]!r}") from exc
    return sequence, entry_id


def encode_resource_cursor(thread_id: str, sequence: int, entry_id: str) -> str:
    """The stable cursor after the entry (``thread_id``, ``sequence``, ``entry_id``) of a resource-wide read:
    ``r1.`` + base64url JSON."""
    payload = json.dumps([thread_id, sequence, entry_id], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return "r1." + base64.urlsafe_b64encode(payload).decode("ascii")


def decode_resource_cursor(cursor: str | None) -> tuple[str, int, str] | None:
    """The (thread_id, sequence, id) a resource cursor points after; ``None`` for the start.

    Raises :class:`InvalidCursorError` for anything :func:`encode_resource_cursor` did not make (a thread's
    cursor included), as :func:`decode_cursor` does, and for a thread id over 256 UTF-8 bytes.
    """
    if cursor is None:
        return None
    try:
        if not isinstance(cursor, str) or not cursor.startswith("r1."):
            raise ValueError("unknown cursor version")
        thread_id, sequence, entry_id = json.loads(base64.urlsafe_b64decode(cursor[3:].encode("ascii")))
        if not isinstance(thread_id, str) or "\x00" in thread_id or len(thread_id.encode("utf-8")) > 256:
            raise ValueError("malformed cursor thread")
        decode_cursor(encode_cursor(sequence, entry_id))  # the (sequence, id) rules of a thread's cursor
    except (ValueError, TypeError, RecursionError, binascii.Error, UnicodeError, InvalidCursorError) as exc:
        raise InvalidCursorError(f"not a prism-memory resource cursor: {str(cursor)[:80]!r}") from exc
    return thread_id, sequence, entry_id


def export_json(record: MemoryRecord) -> dict[str, Any]:
    """An exported record as JSON (timestamps in UTC ISO 8601, ``threadId`` in a resource export); its UTF-8
    size counts toward ``max_bytes``."""

    def instant(value: datetime | None) -> str | None:
        return None if value is None else value.astimezone(timezone.utc).isoformat()

    consent = record.consent
    thread = {} if record.thread_id is None else {"threadId": record.thread_id}
    return {
        **thread,
        "id": record.id,
        "text": record.text,
        "metadata": record.metadata,
        "sequence": record.sequence,
        "importance": record.importance,
        "consent": None
        if consent is None
        else {
            "source": consent.source,
            "scope": consent.scope,
            "visible": consent.visible,
            "grantedAt": instant(consent.granted_at),
            "revokedAt": instant(consent.revoked_at),
        },
        "createdAt": instant(record.created_at),
        "updatedAt": instant(record.updated_at),
        "occurredAt": instant(record.occurred_at),
    }


def export_page(
    records: Sequence[MemoryRecord], limit: int, max_bytes: int, redact: Callable[[MemoryRecord], MemoryRecord],
    cursor: Callable[[MemoryRecord], str] = lambda record: encode_cursor(record.sequence, record.id),
) -> ExportPage:
    """The page cut from ``records``: up to ``limit`` records read after the cursor, in (sequence, id) order.

    Redacts records one at a time with ``redact`` and takes them while their
    compact UTF-8 :func:`export_json` sizes stay within ``max_bytes`` (the
    first always fits); it stops at the first that does not fit, and redacts
    none after it. Raises what ``redact`` raises. ``next_cursor``
    (``cursor(record)``, a thread's cursor by default) points after the last
    record taken; it is ``None`` when the read came back short of ``limit``
    and every record fit.
    """
    page: list[MemoryRecord] = []
    total = 0
    for record in (redact(record) for record in records):
        size = len(json.dumps(export_json(record), ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        if page and total + size > max_bytes:
            break
        page.append(record)
        total += size
    more = len(page) < len(records) or len(records) == limit
    return ExportPage(page, total, cursor(page[-1]) if page and more else None)
