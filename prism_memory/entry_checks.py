"""An entry's checks before anything is embedded: its fields, consent, lineage and expiry.

The facade runs them on each entry of a ``remember`` (an embedding costs a model call); both stores run
:func:`check_expiry_range` again at their own clock, as ``remember_v3`` does. Errors are
:class:`~prism_memory.errors.InvalidEntryError` (and the size and range errors named on each function).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from .checks import LATEST_TIME, MAX_ENTRY_ID_BYTES, MAX_LINEAGE_SOURCES, MAX_SEQUENCE, check_aware, check_id, entry_label
from .errors import (
    InvalidEntryError,
    LimitExceededError,
    PayloadTooLargeError,
)
from .jsoncodec import json_document, load_json, text_bytes
from .types import (
    CONSENT_SCOPES,
    CONSENT_SOURCES,
    ConsentChange,
    EntryRecord,
    MemoryConsent,
    MemoryEntry,
    MemoryLineage,
)

_ENTRY_KEYS = {"id", "text", "metadata", "sequence", "importance", "consent", "lineage", "reflection", "expires_at", "ttl",
               "occurred_at"}


def to_entry(entry: MemoryEntry | Mapping[str, Any], position: int) -> MemoryEntry:
    """Accept a :class:`MemoryEntry` or a mapping with its field names; unknown keys raise :class:`InvalidEntryError`.

    In a mapping, ``consent`` may be a mapping of :class:`MemoryConsent` fields
    and ``lineage`` a mapping ``{"source_ids": [...], "reason": ...}``.
    """
    if isinstance(entry, MemoryEntry):
        return entry
    if not isinstance(entry, Mapping):
        raise InvalidEntryError(f"entry {position} must be a MemoryEntry or a mapping, got {type(entry).__name__}")
    unknown = set(entry) - _ENTRY_KEYS
    if unknown:
        raise InvalidEntryError(f"entry {position} has unknown fields: {sorted(unknown)}")
    if "id" not in entry or "text" not in entry:
        raise InvalidEntryError(f"entry {position} needs an id and a text")
    fields = dict(entry)
    try:
        if isinstance(fields.get("consent"), Mapping):
            fields["consent"] = MemoryConsent(**fields["consent"])
        if isinstance(fields.get("lineage"), Mapping):
            lineage = dict(fields["lineage"])
            fields["lineage"] = MemoryLineage(tuple(lineage.pop("source_ids", ())), **lineage)
    except TypeError as exc:
        raise InvalidEntryError(f"{entry_label(position, fields['id'] if isinstance(fields['id'], str) else None)}: {exc}") from exc
    return MemoryEntry(**fields)


def check_consent_change(change: ConsentChange) -> ConsentChange:
    """Check a ``set_consent`` request: a known consent source and scope or ``None`` (as ``set_consent_v1``), a ``bool`` or
    ``None`` visibility and aware datetimes (Python types); raises :class:`InvalidEntryError`."""
    if change.source is not None and change.source not in CONSENT_SOURCES:
        raise InvalidEntryError(f"consent source must be one of {CONSENT_SOURCES}, got {change.source!r}")
    if change.scope is not None and change.scope not in CONSENT_SCOPES:
        raise InvalidEntryError(f"consent scope must be one of {CONSENT_SCOPES}, got {change.scope!r}")
    if change.visible is not None and not isinstance(change.visible, bool):
        raise InvalidEntryError(f"visible must be a bool, got {change.visible!r}")
    check_aware(change.granted_at, "granted_at")
    check_aware(change.revoked_at, "revoked_at")
    return change


def check_consent(consent: object, where: str) -> MemoryConsent | None:
    """Check a :class:`MemoryConsent` (a known source and scope, ``bool`` ``visible``, aware datetimes: ``consent_is_valid_v1``
    plus Python types), or raise :class:`InvalidEntryError`."""
    if consent is None:
        return None
    if not isinstance(consent, MemoryConsent):
        raise InvalidEntryError(f"{where}: consent must be a MemoryConsent, got {type(consent).__name__}")
    if consent.source not in CONSENT_SOURCES or consent.scope not in CONSENT_SCOPES or not isinstance(consent.visible, bool):
        raise InvalidEntryError(
            f"{where}: consent needs a source in {CONSENT_SOURCES}, a scope in {CONSENT_SCOPES} and a bool visible"
        )
    check_consent_change(ConsentChange(consent.visible, consent.source, consent.scope, consent.granted_at, consent.revoked_at))
    return consent


def lineage_metadata(lineage: MemoryLineage) -> dict[str, Any]:
    """The ``metadata["_lineage"]`` form of a lineage (the key the GIN index covers)."""
    stored: dict[str, Any] = {"sourceIds": list(lineage.source_ids)}
    if lineage.reason is not None:
        stored["reason"] = lineage.reason
    return stored


def check_lineage(stored: object, where: str) -> None:
    """Mirror of ``lineage_is_valid_v1``: ``{"sourceIds": [<= 32 ids, each by the id rule, 512 bytes], "reason"?: str}``,
    else :class:`InvalidEntryError`."""
    if not isinstance(stored, Mapping) or not isinstance(stored.get("sourceIds"), (list, tuple)):
        raise InvalidEntryError(f"{where}: lineage needs a list of source ids")
    sources = stored["sourceIds"]
    if len(sources) > MAX_LINEAGE_SOURCES:
        raise InvalidEntryError(f"{where}: lineage has {len(sources)} source ids; at most {MAX_LINEAGE_SOURCES}")
    for source in sources:
        check_id(source, f"{where}: lineage source id", MAX_ENTRY_ID_BYTES, InvalidEntryError)
    if stored.get("reason") is not None and not isinstance(stored["reason"], str):
        raise InvalidEntryError(f"{where}: lineage reason must be a string")


def check_entry(entry: MemoryEntry, position: int, max_bytes: int) -> dict[str, Any]:
    """Check one entry and return its metadata as stored: a ``dict`` read back from its JSON (``{}`` when unset).

    The checks of ``remember_v3`` (PM002, PM006) plus Python's types and
    encodings, made before the entry is embedded. A ``lineage`` is stored as
    ``metadata["_lineage"]`` (giving both raises). Raises
    :class:`InvalidEntryError` for a bad id (:func:`check_id`, 512 bytes),
    blank text, bad metadata (:func:`prism_memory.jsoncodec.json_document`),
    a bad lineage or consent, a sequence outside 0..2^53-1 or a non-finite
    importance, and :class:`PayloadTooLargeError` when text plus metadata
    JSON exceed ``max_bytes`` UTF-8 bytes (the facade passes
    ``limits.entry_bytes``).
    """
    check_id(entry.id, f"{entry_label(position)}: id", MAX_ENTRY_ID_BYTES, InvalidEntryError)
    where = entry_label(position, entry.id)
    if not isinstance(entry.text, str) or not entry.text.strip():
        raise InvalidEntryError(f"{where}: text must be a non-empty string")
    size = len(text_bytes(entry.text, f"{where}: text", InvalidEntryError))
    metadata = {} if entry.metadata is None else entry.metadata
    if entry.lineage is not None:
        if not isinstance(entry.lineage, MemoryLineage):
            raise InvalidEntryError(f"{where}: lineage must be a MemoryLineage")
        if isinstance(metadata, Mapping) and "_lineage" in metadata:
            raise InvalidEntryError(f"{where}: give the lineage either as lineage= or as metadata['_lineage'], not both")
        metadata = {**metadata, "_lineage": lineage_metadata(entry.lineage)} if isinstance(metadata, Mapping) else metadata
    metadata_text = json_document(metadata, f"{where}: metadata")
    stored = load_json(metadata_text)
    if "_lineage" in stored:
        check_lineage(stored["_lineage"], where)
    size += len(metadata_text.encode("utf-8"))
    if size > max_bytes:
        raise PayloadTooLargeError(f"{where}: text plus metadata is {size} bytes, over the {max_bytes}-byte cap")
    if entry.sequence is not None and (
        isinstance(entry.sequence, bool) or not isinstance(entry.sequence, int) or not 0 <= entry.sequence <= MAX_SEQUENCE
    ):
        raise InvalidEntryError(f"{where}: sequence must be an integer from 0 to 2^53 - 1, got {entry.sequence!r}")
    if entry.importance is not None:
        try:
            finite = not isinstance(entry.importance, bool) and math.isfinite(float(entry.importance))
        except (TypeError, ValueError, OverflowError):
            finite = False
        if not finite or not isinstance(entry.importance, (int, float)):
            raise InvalidEntryError(f"{where}: importance must be a finite number, got {entry.importance!r}")
    check_consent(entry.consent, where)
    check_expiry(entry.expires_at, entry.ttl, where)
    check_aware(entry.occurred_at, f"{where}: occurred_at")
    return stored


def check_expiry(expires_at: object, ttl: object, where: str) -> None:
    """An entry's expiry as it can be sent: ``expires_at`` ``None`` or timezone-aware (:func:`check_aware`),
    ``ttl`` ``None`` or a ``timedelta``, not both; else :class:`InvalidEntryError` (``remember_v3``: PM002).
    Their ranges (after now; more than 0 and at most 36,500 days) are ``remember_v3``'s (PM005)."""
    check_aware(expires_at, f"{where}: expires_at")
    if ttl is not None and not isinstance(ttl, timedelta):
        raise InvalidEntryError(f"{where}: ttl must be a timedelta, got {type(ttl).__name__}")
    if expires_at is not None and ttl is not None:
        raise InvalidEntryError(f"{where}: give expires_at or ttl, not both")


#: The longest ``ttl`` an entry may be written with (``remember_v3``).
MAX_TTL = timedelta(days=36500)


def check_expiry_range(records: Sequence[MemoryEntry | EntryRecord], now: datetime) -> None:
    """``remember_v3``'s expiry ranges, after its other entry checks: each ``expires_at`` after ``now``, each ``ttl``
    more than 0 and at most :data:`MAX_TTL`, ending no later than :data:`~prism_memory.checks.LATEST_TIME`, else
    :class:`LimitExceededError` (PM005). ``Memory.remember``
    checks them against the memory's clock before it queues a write; the emulator's store checks them again at
    its own ``now``, as ``remember_v3`` does."""
    for position, record in enumerate(records, start=1):
        if (record.expires_at is not None and record.expires_at <= now) or (
            record.ttl is not None and not timedelta(0) < record.ttl <= MAX_TTL
        ):
            raise LimitExceededError(f"{entry_label(position, record.id)}: expires_at must be after now, a ttl "
                                     "more than 0 and at most 36500 days")
        if record.ttl is not None and now > LATEST_TIME - record.ttl:
            raise LimitExceededError(f"{entry_label(position, record.id)}: the ttl would end after "
                                     "9999-12-30 00:00 UTC, the latest time stored")
