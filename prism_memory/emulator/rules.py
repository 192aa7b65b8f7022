"""The SQL functions' input rules, mirrored for the emulator.

Each function names the SQL function whose checks it repeats, in that
function's order, with the error type its SQLSTATE maps to
(:data:`prism_memory.errors.SQLSTATE_ERRORS`). The Postgres adapters do not
run these: the SQL functions raise them. Python's own checks (types,
encodings) run first on both stores (:mod:`prism_memory.checks`,
:mod:`prism_memory.rag_arguments`); the id rule is :func:`prism_memory.checks.check_id`.
Parity tests call both stores with the same bad input and compare the errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..checks import (
    MAX_ENTRY_ID_BYTES,
    MAX_SCOPE_ID_BYTES,
    MAX_SEQUENCE,
    check_access_version,
    check_id,
    check_scope_id,
    check_unique_ids,
    entry_label,
)
from ..entry_checks import check_entry
from ..errors import (
    DimensionMismatchError,
    InvalidAuthorizationError,
    InvalidEntryError,
    InvalidQueryError,
    LimitExceededError,
    PayloadTooLargeError,
)
from ..filters import check_filter, jsonb_text_bytes
from ..jsoncodec import load_json
from ..types import HARD_CAPS, EntryRecord, MemoryEntry, RagAccessConstraint, RagChunk, check_int_option
from .vectors import float32

#: Backstop caps of the store layer, as the SQL functions apply them (looser than
#: the per-memory limits, which the facade checks first).
STORE_ENTRY_BYTES = 64 * 1024 * 1024
STORE_WORKING_MEMORY_BYTES = 8 * 1024 * 1024
#: Chunks per ``upsert`` call and ids per ``delete`` call.
MAX_RAG_BATCH = 1000
#: Grants per source (principals plus groups), and groups per ACL reader.
MAX_RAG_GRANTS = 1024
#: UTF-8 bytes of a chunk's text plus its compact JSON metadata.
MAX_CHUNK_BYTES = HARD_CAPS["entry_bytes"]
#: UTF-8 bytes of a RAG read's filter as ``jsonb`` text (the filter language's own cap is 16 KiB:
#: :data:`prism_memory.filters.MAX_FILTER_BYTES`).
MAX_RAG_FILTER_BYTES = 64 * 1024


def check_records(records: Sequence[EntryRecord]) -> list[dict[str, Any]]:
    """``remember_v3``'s entry checks (PM002, PM006 over 64 MiB); returns each record's metadata as stored."""
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


# --- RAG: the rag_*_v1 functions -------------------------------------------


def check_rag_scope(tenant_id: object, scope: object) -> None:
    """``assert_scope_v2`` for a RAG scope: tenant and scope by the id rule (256 bytes), else :class:`InvalidScopeError` (PM001)."""
    check_scope_id("tenant_id", tenant_id)
    check_scope_id("scope", scope)


def check_generation(generation: object, *, required: bool = False) -> int | None:
    """``rag_assert_generation_v1``: ``None`` (unless ``required``) or 0..2^53 - 1, else :class:`InvalidEntryError` (PM002)."""
    if generation is None and not required:
        return None
    if isinstance(generation, bool) or not isinstance(generation, int) or not 0 <= generation <= MAX_SEQUENCE:
        raise InvalidEntryError(f"generation must be an integer from 0 to 2^53 - 1, got {generation!r}")
    return generation


def check_source_id(source_id: object) -> str:
    """A source id by the id rule (512 bytes), else :class:`InvalidEntryError` (PM002)."""
    return check_id(source_id, "source_id", MAX_ENTRY_ID_BYTES, InvalidEntryError)


def check_chunks(
    chunks: Sequence[RagChunk], arguments: Sequence[tuple[str, np.ndarray]]
) -> list[tuple[dict[str, Any], np.ndarray]]:
    """``rag_upsert_v1``'s checks of a batch, after :func:`prism_memory.rag_arguments.chunk_arguments` (``arguments``:
    each chunk's metadata JSON text and embedding); returns each chunk's (stored metadata, float32 embedding).

    In SQL's order: :class:`LimitExceededError` over 1,000 chunks (PM005);
    :class:`InvalidEntryError` for a bad id or source id (the id rule, 512
    bytes), blank text, metadata that is not an object, a negative access
    version (PM002), then a duplicate id; :class:`PayloadTooLargeError` when
    text plus metadata exceed 8 MiB (PM006); :class:`InvalidEmbeddingError`
    for a norm out of bounds (PM003) and :class:`DimensionMismatchError` for
    widths that differ within the batch (PM004). The scope's width is checked
    by the store (``assert_dimensions_v2`` for a RAG scope).
    """
    if len(chunks) > MAX_RAG_BATCH:
        raise LimitExceededError(f"upsert takes at most {MAX_RAG_BATCH} chunks per call, got {len(chunks)}")
    stored = []
    for position, (chunk, (document, _)) in enumerate(zip(chunks, arguments), start=1):
        check_id(chunk.id, f"{entry_label(position, kind='chunk')}: id", MAX_ENTRY_ID_BYTES, InvalidEntryError)
        where = entry_label(position, chunk.id, "chunk")
        check_id(chunk.source_id, f"{where}: source_id", MAX_ENTRY_ID_BYTES, InvalidEntryError)
        if not chunk.text.strip():
            raise InvalidEntryError(f"{where}: text must not be blank")
        value = load_json(document)
        if not isinstance(value, dict):
            raise InvalidEntryError(f"{where}: metadata must be a JSON object")
        if chunk.access_version is not None:
            check_access_version(chunk.access_version, f"{where}: access_version")
        stored.append(value)
    check_unique_ids([chunk.id for chunk in chunks])
    labels = [entry_label(position, chunk.id, "chunk") for position, chunk in enumerate(chunks, start=1)]
    for where, chunk, (document, _) in zip(labels, chunks, arguments):
        if len(chunk.text.encode("utf-8")) + len(document.encode("utf-8")) > MAX_CHUNK_BYTES:
            raise PayloadTooLargeError(f"{where}: text plus metadata is over the {MAX_CHUNK_BYTES}-byte cap")
    vectors = [float32(values, f"{where}: embedding") for where, (_, values) in zip(labels, arguments)]
    if len({vector.shape[0] for vector in vectors}) > 1:
        raise DimensionMismatchError("the embeddings in one batch differ in dimensions")
    return list(zip(stored, vectors))


def check_reader(reader: RagAccessConstraint | None) -> RagAccessConstraint | None:
    """``rag_assert_principal_v1``: the principal and each of at most 1,024 groups by the id rule (256 bytes),
    else :class:`InvalidAuthorizationError` (PM013)."""
    if reader is None:
        return None
    check_id(reader.principal_id, "principal_id", MAX_SCOPE_ID_BYTES, InvalidAuthorizationError)
    if len(reader.group_ids) > MAX_RAG_GRANTS:
        raise InvalidAuthorizationError(f"an ACL read names at most {MAX_RAG_GRANTS} groups, got {len(reader.group_ids)}")
    for group in reader.group_ids:
        check_id(group, "group id", MAX_SCOPE_ID_BYTES, InvalidAuthorizationError)
    return reader


def check_rag_read(
    tenant_id: str, scope: str, top_k: int, filter: str | None, reader: RagAccessConstraint | None, generation: int | None
) -> dict[str, Any] | None:
    """``rag_read_generation_v1``'s checks, then ``metadata_filter_v1``'s, after
    :func:`prism_memory.rag_arguments.read_arguments`; returns the checked filter
    (``None`` when absent or empty).

    The filter must be a JSON object (:class:`InvalidQueryError`, PM008) of
    at most 64 KiB of ``jsonb`` text (:class:`PayloadTooLargeError`, PM006),
    then a filter of the metadata filter language
    (:func:`prism_memory.filters.check_filter`: :class:`InvalidFilterError`,
    PM019). It can only narrow a result, never widen it or reach the SQL text.
    """
    check_rag_scope(tenant_id, scope)
    check_generation(generation)
    check_int_option("top_k", top_k, 1, HARD_CAPS["top_k"])
    wanted = None if filter is None else load_json(filter)
    if filter is not None and not isinstance(wanted, dict):
        raise InvalidQueryError("filter must be a JSON object")
    if filter is not None and jsonb_text_bytes(wanted) > MAX_RAG_FILTER_BYTES:
        raise PayloadTooLargeError(f"filter is over the {MAX_RAG_FILTER_BYTES}-byte hard cap")
    check_reader(reader)
    return check_filter(wanted) or None


def check_query_text(text: str) -> None:
    """``rag_lexical_query_v1``: a query text of at most 64 KiB, else :class:`PayloadTooLargeError` (PM006)."""
    if len(text.encode("utf-8")) > HARD_CAPS["query_bytes"]:
        raise PayloadTooLargeError("the query text is over the 64 KiB hard cap")


def check_source_page(source_id: str, limit: int) -> None:
    """``rag_get_by_source_v1``: the source id (PM002) and ``limit`` in 1..1000 (:class:`LimitExceededError`, PM005)."""
    check_source_id(source_id)
    check_int_option("limit", limit, 1, 1000)


def check_rag_delete(tenant_id: str, scope: str, ids: list[str] | None, source_id: str | None, generation: int | None) -> None:
    """``rag_delete_v1``: scope (PM001), generation (PM002), at least one criterion (PM002), at most 1,000 ids
    (:class:`LimitExceededError`, PM005)."""
    check_rag_scope(tenant_id, scope)
    check_generation(generation)
    if ids is None and source_id is None and generation is None:
        raise InvalidEntryError("delete needs ids, a source_id or a generation")
    if ids is not None and len(ids) > MAX_RAG_BATCH:
        raise LimitExceededError(f"delete takes at most {MAX_RAG_BATCH} ids per call, got {len(ids)}")


def check_source_grants(
    tenant_id: str, source_id: str, principal_ids: list[str], group_ids: list[str], access_version: int
) -> None:
    """``rag_set_source_access_v1``: tenant (PM001), source id and access version (PM002), at most 1,024 grants
    (:class:`LimitExceededError`, PM005), each id by the id rule (:class:`InvalidAuthorizationError`, PM013)."""
    check_scope_id("tenant_id", tenant_id)
    check_source_id(source_id)
    check_access_version(access_version)
    if len(principal_ids) + len(group_ids) > MAX_RAG_GRANTS:
        raise LimitExceededError(f"a source has at most {MAX_RAG_GRANTS} grants")
    for grantee in principal_ids + group_ids:
        check_id(grantee, "a principal or group id", MAX_SCOPE_ID_BYTES, InvalidAuthorizationError)


def check_source_reader(tenant_id: str, source_id: str, reader: RagAccessConstraint | None) -> RagAccessConstraint:
    """``rag_check_source_access_v1``: tenant (PM001), source id (PM002) and a reader (PM013: required)."""
    check_scope_id("tenant_id", tenant_id)
    check_source_id(source_id)
    if reader is None:
        raise InvalidAuthorizationError("check_source_access needs a RagAccessConstraint")
    return check_reader(reader)  # type: ignore[return-value]
