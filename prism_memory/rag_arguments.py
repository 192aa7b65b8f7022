"""The RAG store calls' arguments, checked for what SQL cannot see.

Both RAG stores run these first, so a caller gets the same typed error from
either: Python types, encodings and the JSON codec, and the few rules the SQL
functions lack (each says so; docs/architecture.md, "Where each rule lives",
lists them). The rules of the ``rag_*_v1`` functions (blank ids, byte caps,
ranges, counts, duplicates, norms, widths) are theirs: Postgres raises them
as SQLSTATEs, and the emulator mirrors them in :mod:`prism_memory.emulator.rules`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .checks import MAX_ENTRY_ID_BYTES, check_access_version, check_id, check_int, check_text, check_texts, entry_label
from .embedding import embedding_values
from .errors import (
    InvalidAuthorizationError,
    InvalidEntryError,
    InvalidFilterError,
    InvalidScopeError,
    LimitExceededError,
)
from .jsoncodec import json_text
from .types import RagAccessConstraint, RagChunk


def scope_arguments(tenant_id: object, scope: object) -> None:
    """Tenant and scope must be ``str`` that ``text`` holds, else :class:`InvalidScopeError`."""
    check_text(tenant_id, "tenant_id", InvalidScopeError)
    check_text(scope, "scope", InvalidScopeError)


def generation_argument(generation: object) -> None:
    """A generation: ``None`` or an ``int`` that fits ``bigint``, else :class:`InvalidEntryError`."""
    if generation is not None:
        check_int(generation, "generation", InvalidEntryError)


def reader_argument(authorization: object) -> RagAccessConstraint | None:
    """An ACL reader: ``None`` or a :class:`RagAccessConstraint` of ``str`` ids (``group_ids`` a list or tuple),
    else :class:`InvalidAuthorizationError`; returned with ``group_ids`` as a tuple."""
    if authorization is None:
        return None
    if not isinstance(authorization, RagAccessConstraint):
        raise InvalidAuthorizationError(
            f"authorization must be a RagAccessConstraint (document ACL), got {type(authorization).__name__}"
        )
    check_text(authorization.principal_id, "principal_id", InvalidAuthorizationError)
    groups = check_texts(authorization.group_ids, "group_ids", InvalidAuthorizationError)
    return RagAccessConstraint(authorization.principal_id, tuple(groups))


def read_arguments(
    tenant_id: object, scope: object, top_k: object, filter: object, authorization: object, generation: object
) -> tuple[str | None, RagAccessConstraint | None]:
    """The arguments every RAG read shares; returns the filter's JSON text (``None`` without one) and the reader.

    Raises :class:`InvalidScopeError`, :class:`InvalidEntryError` (generation),
    :class:`LimitExceededError` (``top_k`` not an ``int``),
    :class:`InvalidFilterError` (a filter that is not JSON, see
    :func:`prism_memory.jsoncodec.json_text`) and :class:`InvalidAuthorizationError`.
    The filter's language (docs/api.md, "Metadata filters") is the SQL function's
    rule (``metadata_filter_v1``, PM019), mirrored by the emulator.
    """
    scope_arguments(tenant_id, scope)
    generation_argument(generation)
    check_int(top_k, "top_k", LimitExceededError, bits=32)
    document = None if filter is None else json_text(filter, "filter", InvalidFilterError)
    return document, reader_argument(authorization)


def chunk_arguments(chunks: object) -> list[tuple[str, np.ndarray]]:
    """An ``upsert`` batch: a list of :class:`RagChunk`; returns each chunk's (metadata JSON text, embedding).

    Raises :class:`InvalidEntryError` for a non-list, a non-chunk, an id,
    source id or text that is not a ``str`` ``text`` holds, metadata that is
    not JSON or an access version that is not an ``int``, and
    :class:`InvalidEmbeddingError` for an embedding that cannot be sent
    (:func:`prism_memory.embedding.embedding_values`).
    """
    if isinstance(chunks, (str, bytes)) or not isinstance(chunks, Sequence):
        raise InvalidEntryError("chunks must be a list of RagChunk")
    arguments = []
    for position, chunk in enumerate(chunks, start=1):
        if not isinstance(chunk, RagChunk):
            raise InvalidEntryError(f"chunk {position} must be a RagChunk, got {type(chunk).__name__}")
        check_text(chunk.id, f"{entry_label(position, kind='chunk')}: id", InvalidEntryError)
        where = entry_label(position, chunk.id, "chunk")
        for name in ("source_id", "text"):
            check_text(getattr(chunk, name), f"{where}: {name}", InvalidEntryError)
        metadata = json_text({} if chunk.metadata is None else chunk.metadata, f"{where}: metadata", InvalidEntryError)
        if chunk.access_version is not None:
            check_int(chunk.access_version, f"{where}: access_version", InvalidEntryError)
        arguments.append((metadata, embedding_values(chunk.embedding, f"{where}: embedding")))
    return arguments


def source_page_arguments(source_id: object, after_id: object, limit: object) -> None:
    """``get_by_source``'s source id (a ``str``) and ``after_id`` (``None`` or an id by the id rule, 512 bytes:
    ``rag_get_by_source_v1`` does not check it), else :class:`InvalidEntryError`; ``limit`` an ``int``, else
    :class:`LimitExceededError`."""
    check_text(source_id, "source_id", InvalidEntryError)
    if after_id is not None:
        check_id(after_id, "after_id", MAX_ENTRY_ID_BYTES, InvalidEntryError)
    check_int(limit, "limit", LimitExceededError, bits=32)


def delete_arguments(tenant_id: object, scope: object, ids: object, source_id: object, generation: object) -> list[str] | None:
    """``delete``'s arguments; returns the ids as a list (``None`` when not given).

    Raises :class:`InvalidScopeError` or :class:`InvalidEntryError`. The ids
    and the source id follow the id rule (512 bytes), which ``rag_delete_v1``
    does not check.
    """
    scope_arguments(tenant_id, scope)
    generation_argument(generation)
    if source_id is not None:
        check_id(source_id, "source_id", MAX_ENTRY_ID_BYTES, InvalidEntryError)
    if ids is None:
        return None
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise InvalidEntryError("ids must be a list of chunk ids")
    return [check_id(chunk_id, "id", MAX_ENTRY_ID_BYTES, InvalidEntryError) for chunk_id in ids]


def access_version_argument(access_version: object) -> None:
    """``check_source_access``'s ``access_version``: ``None`` or 0..2^63 - 1, else :class:`InvalidEntryError`
    (``rag_check_source_access_v1`` does not check it)."""
    if access_version is not None:
        check_access_version(access_version)


def source_arguments(tenant_id: object, source_id: object) -> None:
    """Tenant (:class:`InvalidScopeError`) and source id (:class:`InvalidEntryError`) must be ``str`` that ``text`` holds."""
    check_text(tenant_id, "tenant_id", InvalidScopeError)
    check_text(source_id, "source_id", InvalidEntryError)


def grant_arguments(
    tenant_id: object, source_id: object, principal_ids: object, group_ids: object, access_version: object
) -> tuple[list[str], list[str]]:
    """``set_source_access``'s arguments; returns the principal and group ids as lists.

    Raises :class:`InvalidScopeError` (tenant), :class:`InvalidEntryError`
    (source id, a non-list, an access version that is not an ``int``) and
    :class:`InvalidAuthorizationError` (an id that is not a ``str``).
    """
    source_arguments(tenant_id, source_id)
    check_int(access_version, "access_version", InvalidEntryError)
    return (
        check_texts(principal_ids, "principal_ids", InvalidEntryError, InvalidAuthorizationError),
        check_texts(group_ids, "group_ids", InvalidEntryError, InvalidAuthorizationError),
    )
