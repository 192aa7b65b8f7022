"""The memory stores' call arguments, checked on both stores for what SQL cannot see or cannot be sent.

Each function takes one store call's arguments and returns them as they are sent (the RAG store's are in
:mod:`prism_memory.rag_arguments`); the rules SQL decides stay in the SQL functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .checks import (
    as_utc,
    check_aware,
    check_bool,
    check_int,
    check_scope,
    check_text,
    check_texts,
    embedding_labels,
    entry_label,
    real_number,
)
from .embedding import embedding_values
from .entry_checks import check_expiry
from .errors import (
    InvalidCursorError,
    InvalidEmbeddingError,
    InvalidEntryError,
    InvalidScopeError,
    LimitExceededError,
)
from .jsoncodec import json_text
from .types import (
    ConsentChange,
    EntryRecord,
    MemoryConsent,
    Scope,
)


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
    ``remember_v3``'s (mirrored by :func:`prism_memory.emulator.rules.check_records`).
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
        check_aware(record.occurred_at, f"{where}: occurred_at")
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
    check_bool(exportable, "exportable")
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


def check_batch_writes(writes: Sequence[tuple[Scope, Sequence[EntryRecord]]]) -> None:
    """The shape of a ``remember_batch``: every scope a thread (:func:`check_scope`) of one tenant, and no thread twice.

    Raises :class:`InvalidScopeError` before anything is written. Both stores
    check it in Python: ``remember_batch_v3`` takes one tenant and the rows of
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
