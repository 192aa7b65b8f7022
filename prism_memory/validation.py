"""Input checks shared by the public API and the emulator.

The SQL functions apply the same hard-cap checks inside Postgres (so a
``psql`` caller gets them too); these raise the same error types first, before
anything is embedded or written.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from .embedding import assert_finite_vector
from .errors import (
    DimensionMismatchError,
    InvalidAuthorizationError,
    InvalidEntryError,
    InvalidQueryError,
    InvalidScopeError,
    InvalidScoringError,
    LimitExceededError,
    PayloadTooLargeError,
)
from .types import (
    CONSENT_SCOPES,
    CONSENT_SOURCES,
    HARD_CAPS,
    ConsentChange,
    EntryRecord,
    MemoryConsent,
    MemoryEntry,
    MemoryLineage,
    RagAccessConstraint,
    RagChunk,
    RecallScoringOptions,
    Scope,
    check_int_option,
)

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


#: Deepest nesting of objects/arrays accepted in metadata and working memory.
MAX_JSON_DEPTH = 64
#: Sequences are JSON-safe integers, so every client reads them exactly.
MAX_SEQUENCE = 2**53 - 1


def _check_json_value(value: object, where: str, error: type[Exception], depth: int) -> None:
    if depth > MAX_JSON_DEPTH:
        raise error(f"{where} is nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, str):
        _utf8(value, where, error)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise error(f"{where} has a non-string key {key!r}; JSON object keys are strings")
            _utf8(key, f"{where} key {key[:40]!r}", error)
            _check_json_value(item, where, error, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_json_value(item, where, error, depth + 1)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise error(f"{where} holds a non-finite number {value!r}")
    elif value is not None and not isinstance(value, (bool, int)):
        raise error(f"{where} holds a {type(value).__name__}, which is not JSON")


def _jsonb_number(literal: str) -> int | float:
    """A JSON number as ``jsonb`` gives it back: it prints numbers without an exponent, so an integral
    one written with an exponent (``1e+16``) comes back as an integer."""
    if "e" in literal or "E" in literal:
        exact = Decimal(literal)
        if exact == exact.to_integral_value():
            return int(exact)
    return float(literal)


def load_json(document: str) -> Any:
    """Parse JSON the way a ``jsonb`` round trip reads back (see :func:`_jsonb_number`)."""
    return json.loads(document, parse_float=_jsonb_number)


def json_document(value: object, where: str, error: type[Exception] = InvalidEntryError) -> str:
    """Check a JSON object (metadata, working memory) and return its compact JSON text.

    The value must be a ``dict`` with string keys whose values are ``dict``,
    ``list``/``tuple``, ``str``, ``int``, finite ``float``, ``bool`` or ``None``,
    nested at most :data:`MAX_JSON_DEPTH` levels, with no NUL or lone
    surrogate in any string (Postgres cannot store them). Raises ``error``
    otherwise. Tuples are stored as JSON arrays.
    """
    if not isinstance(value, dict):
        raise error(f"{where} must be a JSON object (a dict), got {type(value).__name__}")
    _check_json_value(value, where, error, 1)
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


_ENTRY_KEYS = {"id", "text", "metadata", "sequence", "importance", "consent", "lineage", "reflection"}
MAX_LINEAGE_SOURCES = 32


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
        raise InvalidEntryError(f"entry {position}: {exc}") from exc
    return MemoryEntry(**fields)


_EARLIEST = datetime(1, 1, 2, tzinfo=timezone.utc)
_LATEST = datetime(9999, 12, 30, tzinfo=timezone.utc)


def check_aware(value: object, what: str, error: type[Exception] = InvalidEntryError) -> datetime | None:
    """Return ``value`` if it is ``None`` or a timezone-aware ``datetime`` within years 1..9999 in UTC.

    Naive, out-of-range or other values raise ``error`` (``assert_time_v1`` in SQL has the same bounds).
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


def check_consent(consent: object, where: str) -> MemoryConsent | None:
    """Check a :class:`MemoryConsent` (seed values, bool ``visible``, aware datetimes) or raise :class:`InvalidEntryError`."""
    if consent is None:
        return None
    if not isinstance(consent, MemoryConsent):
        raise InvalidEntryError(f"{where}: consent must be a MemoryConsent, got {type(consent).__name__}")
    if consent.source not in CONSENT_SOURCES or consent.scope not in CONSENT_SCOPES or not isinstance(consent.visible, bool):
        raise InvalidEntryError(f"{where}: consent needs a source in {CONSENT_SOURCES}, a scope in {CONSENT_SCOPES} and a bool visible")
    check_consent_change(ConsentChange(consent.visible, consent.source, consent.scope, consent.granted_at, consent.revoked_at))
    return consent


def check_consent_change(change: ConsentChange) -> ConsentChange:
    """Check a ``set_consent`` request: seed values or ``None``, bool or ``None`` visibility, aware datetimes."""
    if change.source is not None and change.source not in CONSENT_SOURCES:
        raise InvalidEntryError(f"consent source must be one of {CONSENT_SOURCES}, got {change.source!r}")
    if change.scope is not None and change.scope not in CONSENT_SCOPES:
        raise InvalidEntryError(f"consent scope must be one of {CONSENT_SCOPES}, got {change.scope!r}")
    if change.visible is not None and not isinstance(change.visible, bool):
        raise InvalidEntryError(f"visible must be a bool, got {change.visible!r}")
    check_aware(change.granted_at, "granted_at")
    check_aware(change.revoked_at, "revoked_at")
    return change


def lineage_metadata(lineage: MemoryLineage) -> dict[str, Any]:
    """The ``metadata["_lineage"]`` form of a lineage (the key the GIN index covers)."""
    stored: dict[str, Any] = {"sourceIds": list(lineage.source_ids)}
    if lineage.reason is not None:
        stored["reason"] = lineage.reason
    return stored


def check_lineage(stored: object, where: str) -> None:
    """Mirror of ``lineage_is_valid_v1``: ``{"sourceIds": [<= 32 non-blank ids of <= 512 bytes], "reason"?: str}``."""
    if not isinstance(stored, Mapping) or not isinstance(stored.get("sourceIds"), (list, tuple)):
        raise InvalidEntryError(f"{where}: lineage needs a list of source ids")
    sources = stored["sourceIds"]
    if len(sources) > MAX_LINEAGE_SOURCES:
        raise InvalidEntryError(f"{where}: lineage has {len(sources)} source ids; at most {MAX_LINEAGE_SOURCES}")
    for source in sources:
        if not isinstance(source, str) or not source.strip() or len(_utf8(source, f"{where}: source id", InvalidEntryError)) > MAX_ENTRY_ID_BYTES:
            raise InvalidEntryError(f"{where}: lineage source ids must be non-blank strings of at most {MAX_ENTRY_ID_BYTES} bytes")
    if stored.get("reason") is not None and not isinstance(stored["reason"], str):
        raise InvalidEntryError(f"{where}: lineage reason must be a string")


def check_entry(entry: MemoryEntry, position: int, max_bytes: int) -> dict[str, Any]:
    """Check one entry and return its metadata as stored: a ``dict`` read back from its JSON (``{}`` when unset).

    A ``lineage`` is stored as ``metadata["_lineage"]`` (giving both raises).
    Raises :class:`InvalidEntryError` for a bad id, blank text, bad metadata
    (see :func:`json_document`), a bad lineage or consent, a sequence outside
    0..2^53-1 or a non-finite importance, and :class:`PayloadTooLargeError`
    when text plus metadata JSON exceed ``max_bytes`` UTF-8 bytes.
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
    if text_bytes + len(metadata_text.encode("utf-8")) > max_bytes:
        raise PayloadTooLargeError(
            f"{where}: text plus metadata is {text_bytes + len(metadata_text.encode('utf-8'))} bytes, over the {max_bytes}-byte cap"
        )
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
    return stored


def check_shared_ids(ids: Sequence[str]) -> list[str]:
    """Ids of a share grant: non-blank strings of at most 512 bytes (mirror of ``share_with_v1``)."""
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise InvalidEntryError("shared ids must be a list of entry ids")
    for entry_id in ids:
        if not isinstance(entry_id, str) or not entry_id.strip() or len(_utf8(entry_id, "shared id", InvalidEntryError)) > MAX_ENTRY_ID_BYTES:
            raise InvalidEntryError(f"shared ids must be non-blank strings of at most {MAX_ENTRY_ID_BYTES} bytes, got {entry_id!r}")
    return list(ids)


def check_unique_ids(ids: Sequence[str]) -> None:
    """Raise :class:`InvalidEntryError` when an id appears twice in one batch."""
    seen: set[str] = set()
    for entry_id in ids:
        if entry_id in seen:
            raise InvalidEntryError(f"entry id {entry_id!r} appears twice in the batch")
        seen.add(entry_id)


#: Backstop caps of the store layer, as the SQL functions apply them (looser than
#: the per-memory limits, which the public API checks first).
STORE_ENTRY_BYTES = 64 * 1024 * 1024
STORE_WORKING_MEMORY_BYTES = 8 * 1024 * 1024


def check_records(records: Sequence[EntryRecord]) -> list[dict[str, Any]]:
    """The checks ``remember_v1`` applies in SQL, for stores that are not Postgres; returns each record's metadata as stored."""
    metadata = [
        check_entry(
            MemoryEntry(record.id, record.text, record.metadata, record.sequence, record.importance, record.consent),
            position,
            STORE_ENTRY_BYTES,
        )
        for position, record in enumerate(records, start=1)
    ]
    check_unique_ids([record.id for record in records])
    return metadata


def check_batch_writes(writes: Sequence[tuple[Scope, Sequence[EntryRecord]]]) -> None:
    """The scope rules of ``remember_batch``: every scope names a thread of one tenant, and no thread twice.

    Raises :class:`InvalidScopeError` (before anything is written); one
    tenant per call is the Citus rule of docs/scaling.md.
    """
    threads: set[tuple[str, str | None]] = set()
    for scope, _records in writes:
        check_scope(scope, thread_required=True)
        if scope.tenant_id != writes[0][0].tenant_id:
            raise InvalidScopeError("remember_batch: every scope must name the same tenant")
        if (scope.resource_id, scope.thread_id) in threads:
            raise InvalidScopeError(f"remember_batch: thread {scope.thread_id!r} of {scope.resource_id!r} appears twice")
        threads.add((scope.resource_id, scope.thread_id))


# --- RAG vector store (seed: "Standalone durable vector store for RAG") ------

#: Chunks per ``upsert`` call and ids per ``delete`` call.
MAX_RAG_BATCH = 1000
#: Grants per source (principals plus groups), and groups per ACL reader.
MAX_RAG_GRANTS = 1024
#: UTF-8 bytes of a chunk's text plus its compact JSON metadata.
MAX_CHUNK_BYTES = HARD_CAPS["entry_bytes"]
#: UTF-8 bytes of a metadata filter's JSON.
MAX_FILTER_BYTES = 64 * 1024
MAX_ACCESS_VERSION = 2**63 - 1


def check_rag_scope(tenant_id: object, scope: object) -> None:
    """Tenant and scope of a RAG call: non-blank strings of at most 256 bytes, else :class:`InvalidScopeError`."""
    check_scope_id("tenant_id", tenant_id)
    check_scope_id("scope", scope)


def check_generation(generation: object, *, required: bool = False) -> int | None:
    """A generation: an ``int`` in 0..2^53 - 1 (``None`` allowed unless ``required``), else :class:`InvalidEntryError`."""
    if generation is None and not required:
        return None
    if isinstance(generation, bool) or not isinstance(generation, int) or not 0 <= generation <= MAX_SEQUENCE:
        raise InvalidEntryError(f"generation must be an integer from 0 to 2^53 - 1, got {generation!r}")
    return generation


def _check_id(value: object, what: str, max_bytes: int, error: type[Exception]) -> str:
    if not isinstance(value, str) or not value.strip() or len(_utf8(value, what, error)) > max_bytes:
        raise error(f"{what} must be a non-blank string of at most {max_bytes} bytes, got {value!r}")
    return value


def check_source_id(source_id: object) -> str:
    """A source (document) id: non-blank, at most 512 bytes, else :class:`InvalidEntryError`."""
    return _check_id(source_id, "source_id", MAX_ENTRY_ID_BYTES, InvalidEntryError)


def check_access_version(value: object, what: str = "access_version") -> int:
    """An access version: an ``int`` in 0..2^63 - 1, else :class:`InvalidEntryError`."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ACCESS_VERSION:
        raise InvalidEntryError(f"{what} must be an integer from 0 to 2^63 - 1, got {value!r}")
    return value


def check_chunks(chunks: Sequence[RagChunk], dimensions: int | None) -> list[tuple[dict[str, Any], list[float]]]:
    """Check an ``upsert`` batch (at most 1,000 chunks) and return each chunk's (stored metadata, embedding).

    Raises :class:`InvalidEntryError` for a bad id, source id, text, metadata
    (see :func:`json_document`) or access version, or a duplicate id;
    :class:`PayloadTooLargeError` when text plus compact metadata JSON exceed
    8 MiB; :class:`LimitExceededError` for more than 1,000 chunks;
    :class:`InvalidEmbeddingError` / :class:`DimensionMismatchError` for a bad
    embedding, one of another width than ``dimensions`` (when pinned) or than
    the rest of the batch.
    """
    if isinstance(chunks, (str, bytes)) or not isinstance(chunks, Sequence):
        raise InvalidEntryError("chunks must be a list of RagChunk")
    if len(chunks) > MAX_RAG_BATCH:
        raise LimitExceededError(f"upsert takes at most {MAX_RAG_BATCH} chunks per call, got {len(chunks)}")
    checked: list[tuple[dict[str, Any], list[float]]] = []
    for position, chunk in enumerate(chunks, start=1):
        if not isinstance(chunk, RagChunk):
            raise InvalidEntryError(f"chunk {position} must be a RagChunk, got {type(chunk).__name__}")
        _check_id(chunk.id, f"chunk {position}: id", MAX_ENTRY_ID_BYTES, InvalidEntryError)
        where = f"chunk {position} ({chunk.id})"
        _check_id(chunk.source_id, f"{where}: source_id", MAX_ENTRY_ID_BYTES, InvalidEntryError)
        if not isinstance(chunk.text, str) or not chunk.text.strip():
            raise InvalidEntryError(f"{where}: text must be a non-empty string")
        text_bytes = len(_utf8(chunk.text, f"{where}: text", InvalidEntryError))
        metadata_text = json_document({} if chunk.metadata is None else chunk.metadata, f"{where}: metadata")
        if text_bytes + len(metadata_text.encode("utf-8")) > MAX_CHUNK_BYTES:
            raise PayloadTooLargeError(f"{where}: text plus metadata is over the {MAX_CHUNK_BYTES}-byte cap")
        if chunk.access_version is not None:
            check_access_version(chunk.access_version, f"{where}: access_version")
        vector = assert_finite_vector(chunk.embedding, f"embedding of chunk {chunk.id!r}", dimensions)
        if checked and len(vector) != len(checked[0][1]):
            raise DimensionMismatchError("the embeddings in one batch differ in dimensions")
        checked.append((load_json(metadata_text), vector))
    check_unique_ids([chunk.id for chunk in chunks])
    return checked


def check_query_text(text: object) -> str:
    """A ``lexical_query`` text: a ``str`` of valid UTF-8 without NUL (:class:`InvalidQueryError`), at most 64 KiB (:class:`PayloadTooLargeError`)."""
    if not isinstance(text, str):
        raise InvalidQueryError(f"the query text must be a string, got {type(text).__name__}")
    if len(_utf8(text, "the query text", InvalidQueryError)) > HARD_CAPS["query_bytes"]:
        raise PayloadTooLargeError("the query text is over the 64 KiB hard cap")
    return text


def check_filter(filter: object) -> dict[str, Any] | None:
    """A metadata filter as stored JSON (``None`` when absent or empty).

    It must be a JSON object (see :func:`json_document`) of at most 64 KiB,
    else :class:`InvalidQueryError` / :class:`PayloadTooLargeError`. It is
    matched by containment (``metadata @> filter``), bound as one parameter:
    it can only narrow a result, never widen it or reach the SQL text.
    """
    if filter is None:
        return None
    document = json_document(filter, "filter", InvalidQueryError)
    if len(document.encode("utf-8")) > MAX_FILTER_BYTES:
        raise PayloadTooLargeError(f"filter is over the {MAX_FILTER_BYTES}-byte hard cap")
    return load_json(document) or None


def check_authorization(authorization: object) -> RagAccessConstraint | None:
    """An ACL reader (``None``: no ACL), else :class:`InvalidAuthorizationError`.

    ``principal_id`` and each of at most 1,024 ``group_ids`` must be non-blank
    strings of at most 256 bytes.
    """
    if authorization is None:
        return None
    if not isinstance(authorization, RagAccessConstraint):
        raise InvalidAuthorizationError(
            f"authorization must be a RagAccessConstraint (document ACL), got {type(authorization).__name__}"
        )
    _check_id(authorization.principal_id, "principal_id", MAX_SCOPE_ID_BYTES, InvalidAuthorizationError)
    groups = authorization.group_ids
    if isinstance(groups, (str, bytes)) or not isinstance(groups, Sequence):
        raise InvalidAuthorizationError("group_ids must be a list of group ids")
    if len(groups) > MAX_RAG_GRANTS:
        raise InvalidAuthorizationError(f"an ACL reader names at most {MAX_RAG_GRANTS} groups, got {len(groups)}")
    for group in groups:
        _check_id(group, "group id", MAX_SCOPE_ID_BYTES, InvalidAuthorizationError)
    return RagAccessConstraint(authorization.principal_id, tuple(groups))


def check_grants(principal_ids: object, group_ids: object, access_version: object) -> tuple[list[str], list[str], int]:
    """The grants of ``set_source_access``: at most 1,024 ids in all, and an access version in 0..2^63 - 1.

    Raises :class:`InvalidEntryError` for a bad version or a non-list,
    :class:`LimitExceededError` for too many grants and
    :class:`InvalidAuthorizationError` for a malformed id.
    """
    check_access_version(access_version, "access_version")
    lists = []
    for name, ids in (("principal_ids", principal_ids), ("group_ids", group_ids)):
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            raise InvalidEntryError(f"{name} must be a list of ids")
        lists.append(list(ids))
    if len(lists[0]) + len(lists[1]) > MAX_RAG_GRANTS:
        raise LimitExceededError(f"a source has at most {MAX_RAG_GRANTS} grants")
    for grantee in lists[0] + lists[1]:
        _check_id(grantee, "principal and group ids", MAX_SCOPE_ID_BYTES, InvalidAuthorizationError)
    return lists[0], lists[1], access_version  # type: ignore[return-value]


def check_scoring(scoring: object) -> RecallScoringOptions | None:
    """Recall scoring options (mirror of ``scoring_weights_v1``'s checks), else :class:`InvalidScoringError`.

    Each weight given must be a real number (not a bool), finite, within
    [0, 1]; ``half_life_ms`` is required with a recency weight and must be a
    positive finite number. Options with neither weight are plain recall (``None``).
    """
    if scoring is None:
        return None
    if not isinstance(scoring, RecallScoringOptions):
        raise InvalidScoringError(f"scoring must be a RecallScoringOptions, got {type(scoring).__name__}")

    def real(name: str, value: object) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidScoringError(f"{name} must be a number, got {value!r}")
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise InvalidScoringError(f"{name} must be finite, got {value!r}")
        return number

    recency, importance = real("recency_weight", scoring.recency_weight), real("importance_weight", scoring.importance_weight)
    half_life = real("half_life_ms", scoring.half_life_ms)
    for name, weight in (("recency_weight", recency), ("importance_weight", importance)):
        if weight is not None and not 0 <= weight <= 1:
            raise InvalidScoringError(f"{name} must be within [0, 1], got {weight!r}")
    if recency is not None and half_life is None:
        raise InvalidScoringError("half_life_ms is required with a recency weight")
    if half_life is not None and not half_life > 0:
        raise InvalidScoringError(f"half_life_ms must be positive, got {half_life!r}")
    if recency is None and importance is None:
        return None
    return RecallScoringOptions(recency, importance, half_life)


# --- Whole RAG calls: the checks both store adapters run first, in the SQL functions' order ------


def check_rag_read(
    tenant_id: object, scope: object, top_k: object, filter: object, authorization: object, generation: object
) -> tuple[dict[str, Any] | None, RagAccessConstraint | None]:
    """The checks of a RAG read (``rag_read_generation_v1``); returns the stored filter and the reader."""
    check_rag_scope(tenant_id, scope)
    check_generation(generation)
    check_int_option("top_k", top_k, 1, HARD_CAPS["top_k"])
    return check_filter(filter), check_authorization(authorization)


def check_source_page(source_id: object, after_id: object, limit: object) -> None:
    """``get_by_source``'s source id, ``after_id`` cursor (an entry id or ``None``) and ``limit`` (1..1000)."""
    check_source_id(source_id)
    if after_id is not None:
        check_shared_ids([after_id])  # type: ignore[list-item]
    check_int_option("limit", limit, 1, 1000)


def check_rag_delete(tenant_id: object, scope: object, ids: object, source_id: object, generation: object) -> None:
    """``rag_delete_v1``'s checks: at least one criterion, at most 1,000 well-formed ids."""
    check_rag_scope(tenant_id, scope)
    check_generation(generation)
    if ids is None and source_id is None and generation is None:
        raise InvalidEntryError("delete needs ids, a source_id or a generation")
    if ids is not None:
        check_shared_ids(ids)  # type: ignore[arg-type]
        if len(ids) > MAX_RAG_BATCH:  # type: ignore[arg-type]
            raise LimitExceededError(f"delete takes at most {MAX_RAG_BATCH} ids per call, got {len(ids)}")  # type: ignore[arg-type]
    if source_id is not None:
        check_source_id(source_id)


def check_source_grants(
    tenant_id: object, source_id: object, principal_ids: object, group_ids: object, access_version: object
) -> tuple[list[str], list[str], int]:
    """``rag_set_source_access_v1``'s checks (see :func:`check_grants`)."""
    check_scope_id("tenant_id", tenant_id)
    check_source_id(source_id)
    return check_grants(principal_ids, group_ids, access_version)


def check_source_reader(
    tenant_id: object, source_id: object, authorization: object, access_version: object
) -> RagAccessConstraint:
    """``rag_check_source_access_v1``'s checks; the reader is required (:class:`InvalidAuthorizationError`)."""
    check_scope_id("tenant_id", tenant_id)
    check_source_id(source_id)
    reader = check_authorization(authorization)
    if reader is None:
        raise InvalidAuthorizationError("check_source_access needs a RagAccessConstraint")
    if access_version is not None:
        check_access_version(access_version)
    return reader
