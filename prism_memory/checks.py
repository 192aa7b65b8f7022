"""The checks Python makes itself: types, encodings, and the per-memory limits.

What lives here, and why it is Python's job:

* what SQL cannot see or cannot even be sent: Python types (a ``str`` where
  ``text`` is sent, an ``int`` that fits the parameter's integer type, a
  ``bool`` that is not an ``int``, timezone-aware datetimes), encodings
  (:mod:`prism_memory.jsoncodec`), and the shapes a store call flattens
  before SQL sees it (:func:`check_batch_writes`);
* what the facade must check before anything is embedded (an embedding
  costs a model call): each entry (:func:`check_entry`, with the memory's
  ``limits.entry_bytes``), the recall scoring options and scope ids;
* :func:`check_id`, the one definition of the id rule (non-blank, at most N
  UTF-8 bytes), which the SQL functions also apply and the emulator mirrors.

The rules that only mirror SQL for the emulator live in
:mod:`prism_memory.emulator.rules`; the Postgres adapters leave those rules
to the SQL functions' own SQLSTATEs (:data:`prism_memory.errors.SQLSTATE_ERRORS`).
The rules come from the seed specification (``memory.md``: "Inputs /
request", "Composite recall scoring", "Security and performance notes":
hard caps, payload limits, finite embeddings) and from this project's SQL
functions, which each docstring names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from .embedding import embedding_values
from .errors import (
    ConfigurationError,
    DimensionMismatchError,
    InvalidCursorError,
    InvalidEmbeddingError,
    InvalidEntryError,
    InvalidScopeError,
    InvalidScoringError,
    LimitExceededError,
    PayloadTooLargeError,
)
from .jsoncodec import check_storable_text, json_document, json_text, load_json, text_bytes
from .types import (
    CONSENT_SCOPES,
    CONSENT_SOURCES,
    ConsentChange,
    EmbeddingModel,
    EntryRecord,
    MemoryConsent,
    MemoryEntry,
    MemoryLineage,
    RecallScoringOptions,
    Scope,
)

#: UTF-8 bytes of a tenant, resource, thread, RAG scope, principal or group id (``assert_scope_v2``).
MAX_SCOPE_ID_BYTES = 256
#: UTF-8 bytes of an entry, chunk, source or lineage source id (``remember_v2``, ``rag_upsert_v1``).
MAX_ENTRY_ID_BYTES = 512
#: The segment a delegated agent's scope adds to its parent's ids: ``"<resource>/agent:<agent id>"``.
#: Reserved: only :meth:`prism_memory.memory.Memory.child` makes ids that hold it.
AGENT_SEGMENT = "/agent:"
#: A delegated agent's id: 1-64 ASCII letters, digits, ``_``, ``.``, ``-``, starting with a letter or digit.
AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def is_agent_resource(parent_resource_id: str, child_resource_id: str) -> bool:
    """Whether ``child_resource_id`` is a delegated agent's resource of ``parent_resource_id``
    (``"<parent>/agent:<agent id>"``); ``share_with_v1`` applies the same rule."""
    prefix = parent_resource_id + AGENT_SEGMENT
    return child_resource_id.startswith(prefix) and AGENT_ID.fullmatch(child_resource_id[len(prefix):]) is not None
#: Sequences and generations are JSON-safe integers, so every client reads them exactly.
MAX_SEQUENCE = 2**53 - 1
#: Source ids of one lineage (``lineage_is_valid_v1``).
MAX_LINEAGE_SOURCES = 32


# --- Types and encodings: what cannot be sent --------------------------------


def check_text(value: object, what: str, error: type[Exception]) -> str:
    """Return ``value`` if it is a ``str`` Postgres ``text`` can hold (valid UTF-8, no NUL), else raise ``error``.

    Python-only: psycopg would send another type as something else (an
    ``int`` becomes ``'7'``) and cannot send a lone surrogate.
    """
    if not isinstance(value, str):
        raise error(f"{what} must be a string, got {type(value).__name__}")
    check_storable_text(value, what, error)
    return value


def check_texts(values: object, what: str, error: type[Exception], item_error: type[Exception] | None = None) -> list[str]:
    """Return ``values`` as a ``list`` if it is a list or tuple, else raise ``error``; each item must pass
    :func:`check_text` (else ``item_error``, by default ``error``)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise error(f"{what} must be a list of strings, got {type(values).__name__}")
    return [check_text(value, what, item_error or error) for value in values]


def real_number(value: object, what: str, error: type[Exception]) -> float | None:
    """``None``, or ``value`` as a ``float`` if it is a real number (not a ``bool``; one too large for a float
    becomes infinity, for the caller's range rule to refuse), else raise ``error``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{what} must be a number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        return math.inf


def check_bool(value: object, what: str, error: type[Exception]) -> bool:
    """Return ``value`` if it is a ``bool``, else raise ``error`` (Postgres would cast ``1`` or ``'yes'`` to true)."""
    if not isinstance(value, bool):
        raise error(f"{what} must be a bool, got {value!r}")
    return value


def check_int(value: object, what: str, error: type[Exception], bits: int = 64) -> int:
    """Return ``value`` if it is an ``int`` (not a ``bool``) that fits a signed ``bits``-bit SQL integer, else raise ``error``.

    Python-only: a ``bool``, a ``float`` or a larger ``int`` would be cast or
    refused by Postgres with no typed error. The value's range is the SQL
    function's rule.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise error(f"{what} must be an integer, got {value!r}")
    return value


def check_access_version(value: object, what: str = "access_version") -> int:
    """An access version: an ``int`` in 0..2^63 - 1, else :class:`InvalidEntryError` (``rag_upsert_v1`` and
    ``rag_set_source_access_v1`` refuse a negative one with PM002; ``rag_check_source_access_v1`` does not check it)."""
    if check_int(value, what, InvalidEntryError) < 0:
        raise InvalidEntryError(f"{what} must be an integer from 0 to 2^63 - 1, got {value!r}")
    return value  # type: ignore[return-value]


_EARLIEST = datetime(1, 1, 2, tzinfo=timezone.utc)
_LATEST = datetime(9999, 12, 30, tzinfo=timezone.utc)


def check_aware(value: object, what: str, error: type[Exception] = InvalidEntryError) -> datetime | None:
    """Return ``value`` if it is ``None`` or a timezone-aware ``datetime`` within years 1..9999 in UTC, else raise ``error``.

    Awareness is Python-only (Postgres would read a naive time in the
    session's time zone); the year range is also ``assert_time_v1``'s (PM002).
    """
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise error(f"{what} must be a timezone-aware datetime, got {value!r}")
    try:
        in_range = _EARLIEST <= value.astimezone(timezone.utc) <= _LATEST
    except OverflowError:
        in_range = False
    if not in_range:
        raise error(f"{what} must be between years 1 and 9999, got {value!r}")
    return value


def check_now(now: object) -> datetime:
    """A store call's ``now``, in UTC: the current time when ``None``, else ``now`` if :func:`check_aware` accepts it.

    Raises :class:`InvalidEntryError` for a naive datetime or another type
    (Postgres would read a naive time in the session's time zone, and psycopg
    would send a string as it is), so both stores stamp the same instant.
    """
    if now is None:
        return datetime.now(timezone.utc)
    return as_utc(check_aware(now, "now"))


def as_utc(value: datetime | None) -> datetime | None:
    """An aware datetime in ``timezone.utc`` (``None`` stays ``None``): how both stores return times, whatever
    the offset it was given with or the database session's ``TimeZone``."""
    return None if value is None else value.astimezone(timezone.utc)


def scope_texts(scope: object) -> tuple[str, str, str | None]:
    """A :class:`Scope` whose ids are ``str`` that ``text`` holds (``thread_id`` may be ``None``), as a tuple;
    else :class:`InvalidScopeError`. The id rule itself is ``assert_scope_v2``'s (:func:`check_scope`)."""
    if not isinstance(scope, Scope):
        raise InvalidScopeError(f"scope must be a Scope, got {type(scope).__name__}")
    return (
        check_text(scope.tenant_id, "tenant_id", InvalidScopeError),
        check_text(scope.resource_id, "resource_id", InvalidScopeError),
        None if scope.thread_id is None else check_text(scope.thread_id, "thread_id", InvalidScopeError),
    )


# --- The id rule --------------------------------------------------------------


def check_id(value: object, what: str, max_bytes: int, error: type[Exception]) -> str:
    """The id rule, defined once: return ``value`` if it is a non-blank ``str`` of at most ``max_bytes`` UTF-8 bytes.

    Raises ``error`` otherwise (and for a NUL or lone surrogate, see
    :func:`check_text`). Blank means empty or only characters that
    ``str.isspace`` accepts, exactly SQL's ``is_blank_v1``. In SQL the rule is
    ``is_id_v1`` (raised by ``assert_id_v1``): 256 bytes for scope, principal,
    group and model ids (PM001, PM013, PM017), 512 for entry, chunk and source
    ids (PM002).
    """
    if not isinstance(value, str) or not value.strip():
        raise error(f"{what} must be a non-blank string of at most {max_bytes} bytes, got {value!r}")
    if len(text_bytes(value, what, error)) > max_bytes:
        raise error(f"{what} is longer than {max_bytes} bytes")
    return value


def check_scope_id(name: str, value: object) -> str:
    """A tenant, resource or thread id (:func:`check_id`, 256 bytes), else :class:`InvalidScopeError`."""
    return check_id(value, name, MAX_SCOPE_ID_BYTES, InvalidScopeError)


def check_scope(scope: Scope, *, thread_required: bool) -> Scope:
    """Check every id of ``scope`` (``assert_scope_v2``); ``thread_id`` must be set when ``thread_required``.

    Raises :class:`InvalidScopeError`.
    """
    check_scope_id("tenant_id", scope.tenant_id)
    check_scope_id("resource_id", scope.resource_id)
    if thread_required or scope.thread_id is not None:
        if scope.thread_id is None:
            raise InvalidScopeError("thread_id is required for semantic memory operations")
        check_scope_id("thread_id", scope.thread_id)
    return scope


def check_shared_ids(ids: object) -> list[str]:
    """Entry ids given as a list (share grants, forget): each passes :func:`check_id` (512 bytes), else
    :class:`InvalidEntryError` (the rule of ``share_with_v1``)."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise InvalidEntryError("shared ids must be a list of entry ids")
    return [check_id(entry_id, "shared id", MAX_ENTRY_ID_BYTES, InvalidEntryError) for entry_id in ids]


def check_unique_ids(ids: Sequence[str]) -> None:
    """Raise :class:`InvalidEntryError` when an id appears twice in one batch."""
    seen: set[str] = set()
    for entry_id in ids:
        if entry_id in seen:
            raise InvalidEntryError(f"entry id {entry_id!r} appears twice in the batch")
        seen.add(entry_id)


# --- Entries: what must hold before anything is embedded ---------------------


def entry_label(position: int, item_id: object = None, kind: str = "entry") -> str:
    """Where in a batch an error is, the one convention of every message (and of the SQL functions'):
    ``entry 2 (b)``, the item's 1-based position and its id, or ``entry 2`` while the id is not known to be
    usable (``item_id`` ``None``). A field follows after a colon: ``entry 2 (b): embedding[0] is not finite``."""
    return f"{kind} {position}" if item_id is None else f"{kind} {position} ({item_id})"


def embedding_labels(ids: Sequence[str]) -> list[str]:
    """The label of each entry's embedding in a batch of entries with ``ids``: ``entry 2 (b): embedding``."""
    return [f"{entry_label(position, entry_id)}: embedding" for position, entry_id in enumerate(ids, start=1)]


_ENTRY_KEYS = {"id", "text", "metadata", "sequence", "importance", "consent", "lineage", "reflection", "expires_at", "ttl"}


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
    """Check a ``set_consent`` request: a seed source and scope or ``None`` (as ``set_consent_v1``), a ``bool`` or
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
    """Check a :class:`MemoryConsent` (seed values, ``bool`` ``visible``, aware datetimes: ``consent_is_valid_v1``
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

    The checks of ``remember_v2`` (PM002, PM006) plus Python's types and
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
    return stored


def check_expiry(expires_at: object, ttl: object, where: str) -> None:
    """An entry's expiry as it can be sent: ``expires_at`` ``None`` or timezone-aware (:func:`check_aware`),
    ``ttl`` ``None`` or a ``timedelta``, not both; else :class:`InvalidEntryError` (``remember_v2``: PM002).
    Their ranges (after now; more than 0 and at most 36,500 days) are ``remember_v2``'s (PM005)."""
    check_aware(expires_at, f"{where}: expires_at")
    if ttl is not None and not isinstance(ttl, timedelta):
        raise InvalidEntryError(f"{where}: ttl must be a timedelta, got {type(ttl).__name__}")
    if expires_at is not None and ttl is not None:
        raise InvalidEntryError(f"{where}: give expires_at or ttl, not both")


#: The longest ``ttl`` an entry may be written with (``remember_v2``).
MAX_TTL = timedelta(days=36500)


def check_expiry_range(records: Sequence[MemoryEntry | EntryRecord], now: datetime) -> None:
    """``remember_v2``'s expiry ranges, after its other entry checks: each ``expires_at`` after ``now``, each ``ttl``
    more than 0 and at most :data:`MAX_TTL`, else :class:`LimitExceededError` (PM005). ``Memory.remember``
    checks them against the memory's clock before it queues a write; the emulator's store checks them again at
    its own ``now``, as ``remember_v2`` does."""
    for position, record in enumerate(records, start=1):
        if (record.expires_at is not None and record.expires_at <= now) or (
            record.ttl is not None and not timedelta(0) < record.ttl <= MAX_TTL
        ):
            raise LimitExceededError(f"{entry_label(position, record.id)}: expires_at must be after now, a ttl "
                                     "more than 0 and at most 36500 days")


# --- Store calls: shapes SQL cannot see ---------------------------------------


def record_arguments(records: object) -> list[tuple[str, np.ndarray]]:
    """The records of a ``remember`` checked for what cannot be sent; returns each one's (metadata JSON, embedding).

    Raises :class:`InvalidEntryError` for a non-list or non-:class:`EntryRecord`,
    an id or text that is not a ``str`` ``text`` holds, metadata that is not
    JSON (:func:`prism_memory.jsoncodec.json_text`; ``None`` is sent as
    absent), a sequence that is not an ``int``, an importance that is not a
    real number, or a consent that is not a :class:`MemoryConsent` with
    ``str`` source and scope, ``bool`` visibility and aware datetimes; and
    :class:`InvalidEmbeddingError` for an embedding that cannot be sent
    (:func:`prism_memory.embedding.embedding_values`). The rules are
    ``remember_v2``'s (mirrored by :func:`prism_memory.emulator.rules.check_records`).
    """
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        raise InvalidEntryError("records must be a list of EntryRecord")
    arguments = []
    for position, record in enumerate(records, start=1):
        if not isinstance(record, EntryRecord):
            raise InvalidEntryError(f"{entry_label(position)} must be an EntryRecord, got {type(record).__name__}")
        check_text(record.id, f"{entry_label(position)}: id", InvalidEntryError)
        where = entry_label(position, record.id)
        check_text(record.text, f"{where}: text", InvalidEntryError)
        metadata = "{}" if record.metadata is None else json_text(record.metadata, f"{where}: metadata", InvalidEntryError)
        if record.sequence is not None:
            check_int(record.sequence, f"{where}: sequence", InvalidEntryError)
        if record.importance is not None:
            try:
                real = not isinstance(record.importance, bool) and isinstance(float(record.importance), float)
            except (TypeError, ValueError, OverflowError):
                real = False
            if not real or not isinstance(record.importance, (int, float)):
                raise InvalidEntryError(f"{where}: importance must be a number that fits a float, got {record.importance!r}")
        consent = record.consent
        if consent is not None:
            if not isinstance(consent, MemoryConsent):
                raise InvalidEntryError(f"{where}: consent must be a MemoryConsent, got {type(consent).__name__}")
            check_text(consent.source, f"{where}: consent source", InvalidEntryError)
            check_text(consent.scope, f"{where}: consent scope", InvalidEntryError)
            check_bool(consent.visible, f"{where}: consent visible", InvalidEntryError)
            check_aware(consent.granted_at, f"{where}: consent granted_at")
            check_aware(consent.revoked_at, f"{where}: consent revoked_at")
        check_expiry(record.expires_at, record.ttl, where)
        arguments.append((metadata, embedding_values(record.embedding, f"{where}: embedding")))
    return arguments


def consent_change_arguments(change: object) -> ConsentChange:
    """A ``set_consent`` change as it can be sent: a :class:`ConsentChange` whose source and scope are ``None`` or
    ``str`` that ``text`` holds, whose ``visible`` is ``None`` or a ``bool`` and whose times are aware (returned in
    UTC); else :class:`InvalidEntryError`. The allowed values are ``set_consent_v1``'s (:func:`check_consent_change`)."""
    if not isinstance(change, ConsentChange):
        raise InvalidEntryError(f"change must be a ConsentChange, got {type(change).__name__}")
    for what, value in (("consent source", change.source), ("consent scope", change.scope)):
        if value is not None:
            check_text(value, what, InvalidEntryError)
    if change.visible is not None:
        check_bool(change.visible, "visible", InvalidEntryError)
    return ConsentChange(
        change.visible, change.source, change.scope,
        as_utc(check_aware(change.granted_at, "granted_at")), as_utc(check_aware(change.revoked_at, "revoked_at")),
    )


def correction_arguments(entry_id: object, text: object, embedding: object) -> np.ndarray:
    """A ``correct`` call's entry id and text as ``str`` that ``text`` holds (else :class:`InvalidEntryError`);
    returns the embedding's values (:func:`prism_memory.embedding.embedding_values`, "the corrected embedding")."""
    check_text(entry_id, "entry_id", InvalidEntryError)
    check_text(text, "the corrected text", InvalidEntryError)
    return embedding_values(embedding, "the corrected embedding")


def reembed_arguments(ids: object, texts: object, embeddings: object) -> list[np.ndarray]:
    """A ``reembed`` call's ids and texts as lists of ``str`` that ``text`` holds (else :class:`InvalidEntryError`);
    returns each embedding's values, labelled ``entry N (id): embedding`` (:class:`InvalidEmbeddingError`)."""
    ids = check_texts(ids, "ids", InvalidEntryError)
    check_texts(texts, "texts", InvalidEntryError)
    if isinstance(embeddings, (str, bytes)) or not isinstance(embeddings, Sequence):
        raise InvalidEmbeddingError(f"embeddings must be a list of embeddings, got {type(embeddings).__name__}")
    return [embedding_values(vector, label) for label, vector in zip(embedding_labels(ids), embeddings)]


def page_arguments(after: object, limit: object, exportable: object) -> tuple[int, str] | None:
    """A ``list_by_thread`` call: ``after`` is ``None`` or a (sequence ``int``, id ``str``) pair (else
    :class:`InvalidCursorError`), ``limit`` an ``int`` (else :class:`LimitExceededError`; its range is
    ``list_entries_v2``'s) and ``exportable`` a ``bool``; returns ``after`` as a tuple."""
    if after is not None:
        if not isinstance(after, (tuple, list)) or len(after) != 2:
            raise InvalidCursorError(f"after must be a (sequence, id) pair, got {after!r}")
        check_int(after[0], "the cursor's sequence", InvalidCursorError)
        check_text(after[1], "the cursor's id", InvalidCursorError)
        after = (after[0], after[1])
    check_int(limit, "limit", LimitExceededError, bits=32)
    check_bool(exportable, "exportable", LimitExceededError)
    return after


def resource_cursor_arguments(after: object) -> tuple[str, int, str] | None:
    """A resource-wide cursor as it can be sent: ``None`` or a (thread_id ``str``, sequence ``int``, id ``str``)
    triple, else :class:`InvalidCursorError`; returned as a tuple. ``assert_resource_cursor_v1`` checks the
    values (PM005: non-blank thread and id)."""
    if after is None:
        return None
    if not isinstance(after, (tuple, list)) or len(after) != 3:
        raise InvalidCursorError(f"after must be a (thread_id, sequence, id) triple, got {after!r}")
    check_text(after[0], "the cursor's thread_id", InvalidCursorError)
    check_int(after[1], "the cursor's sequence", InvalidCursorError)
    check_text(after[2], "the cursor's id", InvalidCursorError)
    return after[0], after[1], after[2]


def resource_entry_arguments(entries: object) -> tuple[list[str], list[str]]:
    """A ``purge_resource`` call's ``(thread_id, entry_id)`` pairs as two lists of ``str`` that ``text`` holds,
    else :class:`InvalidEntryError` (the count, 1..64, is ``purge_resource_v1``'s rule)."""
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise InvalidEntryError("entries must be a list of (thread_id, entry_id) pairs")
    threads, ids = [], []
    for pair in entries:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidEntryError(f"entries must be (thread_id, entry_id) pairs, got {pair!r}")
        threads.append(check_text(pair[0], "thread_id", InvalidScopeError))
        ids.append(check_text(pair[1], "entry id", InvalidEntryError))
    return threads, ids


def retention_arguments(max_age_days: object, max_entries: object, batch_size: object) -> float | None:
    """A ``retention_candidates`` call: ``max_age_days`` ``None`` or a real number (returned as a ``float``),
    ``max_entries`` ``None`` or an ``int`` and ``batch_size`` an ``int``, else :class:`LimitExceededError`
    (the ranges are ``retention_candidates_v2``'s)."""
    if max_entries is not None:
        check_int(max_entries, "max_entries", LimitExceededError)
    check_int(batch_size, "batch_size", LimitExceededError, bits=32)
    return real_number(max_age_days, "max_age_days", LimitExceededError)


#: UTF-8 bytes of an embedding model id (``use_embedding_model_v1``).
MAX_MODEL_ID_BYTES = 256


def check_model(model: object, widths: Sequence[int] = ()) -> EmbeddingModel | None:
    """A store call's ``model`` (the embedding-model guard): ``None``, or an :class:`EmbeddingModel` whose
    ``model_id`` passes the id rule (:func:`check_id`, 256 bytes) and whose ``dimensions`` is an ``int`` in
    1..16000, else :class:`ConfigurationError` (``use_embedding_model_v1`` and ``recall_v3``
    raise PM017 alike); :class:`DimensionMismatchError` when one of ``widths`` (the call's embeddings) is not
    ``model.dimensions``. Both stores check it before anything is sent."""
    if model is None:
        return None
    if not isinstance(model, EmbeddingModel):
        raise ConfigurationError(f"model must be an EmbeddingModel or None, got {type(model).__name__}")
    check_id(model.model_id, "the embedding model id", MAX_MODEL_ID_BYTES, ConfigurationError)
    if isinstance(model.dimensions, bool) or not isinstance(model.dimensions, int) or not 1 <= model.dimensions <= 16000:
        raise ConfigurationError(f"the embedding model's width must be an int between 1 and 16000, got {model.dimensions!r}")
    for width in widths:
        if width != model.dimensions:
            raise DimensionMismatchError(f"an embedding has {width} dimensions; the model {model.model_id!r} has {model.dimensions}")
    return model


def check_batch_writes(writes: Sequence[tuple[Scope, Sequence[EntryRecord]]]) -> None:
    """The shape of a ``remember_batch``: every scope a thread (:func:`check_scope`) of one tenant, and no thread twice.

    Raises :class:`InvalidScopeError` before anything is written. Both stores
    check it in Python: ``remember_batch_v2`` takes one tenant and the rows of
    every thread as flat arrays, so it never sees a scope without rows nor
    tells two writes of one thread apart (one tenant per call is the Citus
    rule of docs/scaling.md).
    """
    threads: set[tuple[str, str | None]] = set()
    for scope, _records in writes:
        check_scope(scope, thread_required=True)
        if scope.tenant_id != writes[0][0].tenant_id:
            raise InvalidScopeError("remember_batch: every scope must name the same tenant")
        if (scope.resource_id, scope.thread_id) in threads:
            raise InvalidScopeError(f"remember_batch: thread {scope.thread_id!r} of {scope.resource_id!r} appears twice")
        threads.add((scope.resource_id, scope.thread_id))


def scoring_numbers(scoring: object) -> RecallScoringOptions | None:
    """Recall scoring options as ``float`` s (or ``None``), else :class:`InvalidScoringError`.

    Python types only: ``scoring`` must be ``None`` or a
    :class:`RecallScoringOptions` whose fields are real numbers (not
    ``bool``) or ``None``; a number too large for a float becomes infinity
    (which the range rule then refuses). The ranges are
    ``scoring_weights_v1``'s (PM015), see :func:`check_scoring`.
    """
    if scoring is None:
        return None
    if not isinstance(scoring, RecallScoringOptions):
        raise InvalidScoringError(f"scoring must be a RecallScoringOptions, got {type(scoring).__name__}")
    return RecallScoringOptions(
        real_number(scoring.recency_weight, "recency_weight", InvalidScoringError),
        real_number(scoring.importance_weight, "importance_weight", InvalidScoringError),
        real_number(scoring.half_life_ms, "half_life_ms", InvalidScoringError),
    )


def check_scoring(scoring: object) -> RecallScoringOptions | None:
    """Recall scoring options (:func:`scoring_numbers`, then ``scoring_weights_v1``'s rules), else :class:`InvalidScoringError`.

    Each weight given must be finite and within [0, 1]; ``half_life_ms`` is
    required with a recency weight and must be a positive finite number.
    Options with neither weight are plain recall (``None``). The facade
    checks them before it embeds the query; the emulator applies them as
    the SQL function does.
    """
    numbers = scoring_numbers(scoring)
    if numbers is None:
        return None
    recency, importance, half_life = numbers.recency_weight, numbers.importance_weight, numbers.half_life_ms
    for name, weight in (("recency_weight", recency), ("importance_weight", importance)):
        if weight is not None and not 0 <= weight <= 1:
            raise InvalidScoringError(f"{name} must be a finite number within [0, 1], got {weight!r}")
    if recency is not None and half_life is None:
        raise InvalidScoringError("half_life_ms is required with a recency weight")
    if half_life is not None and not 0 < half_life < math.inf:
        raise InvalidScoringError(f"half_life_ms must be a positive finite number, got {half_life!r}")
    if recency is None and importance is None:
        return None
    return numbers
