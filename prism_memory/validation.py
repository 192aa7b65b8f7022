"""Input checks shared by the public API and the emulator.

The SQL functions apply the same hard-cap checks inside Postgres (so a
``psql`` caller gets them too); these raise the same error types first, before
anything is embedded or written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidEntryError, InvalidScopeError, PayloadTooLargeError
from .types import HARD_CAPS, EntryRecord, MemoryEntry, Scope

MAX_SCOPE_ID_BYTES = 256
MAX_ENTRY_ID_BYTES = 512


def _utf8(value: str, what: str, error: type[Exception]) -> bytes:
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{what} contains a lone surrogate and is not valid UTF-8") from exc
    if b"\x00" in encoded:
        raise error(f"{what} contains a NUL character, which Postgres text cannot store")
    return encoded


def check_scope_id(name: str, value: object) -> str:
    """Return ``value`` if it is a non-blank ``str`` of at most 256 UTF-8 bytes, else raise :class:`InvalidScopeError`."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidScopeError(f"{name} must be a non-empty string, got {value!r}")
    if len(_utf8(value, name, InvalidScopeError)) > MAX_SCOPE_ID_BYTES:
        raise InvalidScopeError(f"{name} is longer than {MAX_SCOPE_ID_BYTES} bytes")
    return value


def check_scope(scope: Scope, *, thread_required: bool) -> Scope:
    """Check every id of ``scope``; ``thread_id`` must be set when ``thread_required`` (semantic operations)."""
    check_scope_id("tenant_id", scope.tenant_id)
    check_scope_id("resource_id", scope.resource_id)
    if thread_required or scope.thread_id is not None:
        if scope.thread_id is None:
            raise InvalidScopeError("thread_id is required for semantic memory operations")
        check_scope_id("thread_id", scope.thread_id)
    return scope


def metadata_json(metadata: object, where: str) -> str:
    """Serialise entry metadata (a JSON object with string keys, finite numbers) or raise :class:`InvalidEntryError`."""
    if not isinstance(metadata, Mapping):
        raise InvalidEntryError(f"{where}: metadata must be a JSON object (a mapping), got {type(metadata).__name__}")
    try:
        text = json.dumps(metadata, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidEntryError(f"{where}: metadata is not JSON-serialisable: {exc}") from exc
    _utf8(text, f"{where}: metadata", InvalidEntryError)
    return text


_ENTRY_KEYS = {"id", "text", "metadata", "sequence", "importance"}


def to_entry(entry: MemoryEntry | Mapping[str, Any], position: int) -> MemoryEntry:
    """Accept a :class:`MemoryEntry` or a mapping with its field names; unknown keys raise :class:`InvalidEntryError`."""
    if isinstance(entry, MemoryEntry):
        return entry
    if not isinstance(entry, Mapping):
        raise InvalidEntryError(f"entry {position} must be a MemoryEntry or a mapping, got {type(entry).__name__}")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise InvalidEntryError(f"entry {position} has unknown fields: {sorted(unknown)}")
    if "id" not in entry or "text" not in entry:
        raise InvalidEntryError(f"entry {position} needs an id and a text")
    return MemoryEntry(**entry)


def check_entry(entry: MemoryEntry, position: int, max_bytes: int) -> dict[str, Any]:
    """Check one entry and return its metadata as a ``dict`` (``{}`` when unset).

    Raises :class:`InvalidEntryError` for a bad id, empty text, bad metadata,
    sequence or importance, and :class:`PayloadTooLargeError` when text plus
    metadata JSON exceed ``max_bytes`` UTF-8 bytes.
    """
    where = f"entry {position}"
    if not isinstance(entry.id, str) or not entry.id.strip():
        raise InvalidEntryError(f"{where}: id must be a non-empty string, got {entry.id!r}")
    if len(_utf8(entry.id, f"{where}: id", InvalidEntryError)) > MAX_ENTRY_ID_BYTES:
        raise InvalidEntryError(f"{where}: id is longer than {MAX_ENTRY_ID_BYTES} bytes")
    where = f"entry {position} ({entry.id})"
    if not isinstance(entry.text, str) or not entry.text.strip():
        raise InvalidEntryError(f"{where}: text must be a non-empty string")
    text_bytes = len(_utf8(entry.text, f"{where}: text", InvalidEntryError))
    metadata = {} if entry.metadata is None else entry.metadata
    metadata_bytes = len(metadata_json(metadata, where).encode("utf-8"))
    if text_bytes + metadata_bytes > max_bytes:
        raise PayloadTooLargeError(f"{where}: text plus metadata is {text_bytes + metadata_bytes} bytes, over the {max_bytes}-byte cap")
    if entry.sequence is not None and (
        isinstance(entry.sequence, bool) or not isinstance(entry.sequence, int) or not -(2**63) <= entry.sequence < 2**63
    ):
        raise InvalidEntryError(f"{where}: sequence must be a 64-bit integer, got {entry.sequence!r}")
    if entry.importance is not None and (
        isinstance(entry.importance, bool)
        or not isinstance(entry.importance, (int, float))
        or not math.isfinite(entry.importance)
    ):
        raise InvalidEntryError(f"{where}: importance must be a finite number, got {entry.importance!r}")
    return dict(metadata)


def check_unique_ids(ids: Sequence[str]) -> None:
    """Raise :class:`InvalidEntryError` when an id appears twice in one batch."""
    seen: set[str] = set()
    for entry_id in ids:
        if entry_id in seen:
            raise InvalidEntryError(f"entry id {entry_id!r} appears twice in the batch")
        seen.add(entry_id)


def check_records(records: Sequence[EntryRecord]) -> None:
    """The checks ``remember_v1`` applies in SQL, for stores that are not Postgres (hard caps only)."""
    for position, record in enumerate(records, start=1):
        check_entry(
            MemoryEntry(record.id, record.text, record.metadata, record.sequence, record.importance),
            position,
            HARD_CAPS["entry_bytes"],
        )
    check_unique_ids([record.id for record in records])
