"""Typed errors raised by both backends.

Every error the package raises derives from :class:`PrismMemoryError`. Bad
input raises a :class:`ValidationError` subclass *before* anything is written.
The SQL functions raise the same conditions with the SQLSTATEs listed in
:data:`SQLSTATE_ERRORS`; the Postgres caller maps them back to these types
(``prism_memory.postgres.errors.wrap_exceptions``) and the emulator raises the
same types directly.
"""

from __future__ import annotations


class PrismMemoryError(Exception):
    """Base class of every prism-memory error."""


class ValidationError(PrismMemoryError, ValueError):
    """Bad input: raised before anything is written; stored data is unchanged."""


class InvalidScopeError(ValidationError):
    """A tenant, resource or (for semantic operations) thread id is missing or malformed."""


class InvalidEntryError(ValidationError):
    """An entry is malformed: empty text, bad id, duplicate id, non-object metadata, non-finite importance."""


class InvalidEmbeddingError(ValidationError):
    """An embedding is empty, contains NaN/±Infinity or non-numbers, or is the zero vector."""


class DimensionMismatchError(InvalidEmbeddingError):
    """An embedding's width differs from the configured (pinned) dimension or from the stored entries."""


class InvalidQueryError(ValidationError):
    """A recall query is not a string, is blank, or is not valid UTF-8; or a RAG ``filter`` is not a JSON object."""


class InvalidFilterError(InvalidQueryError):
    """A metadata filter is malformed or over a cap (SQLSTATE PM019); nothing ran and nothing was written.

    Raised by :func:`prism_memory.filters.check_filter` and by the SQL function
    ``metadata_filter_v1`` for: a filter that is not a JSON object, an unknown or
    misplaced operator, an operand of the wrong JSON type, a malformed field path,
    an object mixing operator and non-operator keys, a key starting with ``$``
    inside a containment document, a non-finite number, and the caps (nesting
    depth 8, 64 conditions, 256 elements in one ``$in``/``$nin``, 8 segments in
    a path, 16 KiB of filter JSON). The message names the offending path or
    operator (docs/api.md, "Metadata filters"). A subclass of
    :class:`InvalidQueryError`, which a RAG filter that is not a JSON object raises.
    """


class LimitExceededError(ValidationError):
    """A numeric option (top_k, message_range, a limit) is out of range or over its hard cap."""


class PayloadTooLargeError(LimitExceededError):
    """A payload (entry text + metadata, working memory, query) is over its byte cap."""


class WorkingMemoryValidationError(ValidationError):
    """Working memory is not a JSON object, or fails the JSON Schema / host validation hook."""


class InvalidIdentifierError(ValidationError):
    """A schema or table name cannot be used as a Postgres identifier."""


class EmbeddingFailedError(PrismMemoryError):
    """The host's embedder raised; the original exception is ``__cause__``. Nothing was written."""


class EmbeddingUnavailableError(EmbeddingFailedError):
    """An embedding service could not answer now (a timeout, a lost connection, HTTP 429 or 5xx after the
    client's own retries); the client's exception is ``__cause__``. Nothing was written: retry later.
    Raised by the HTTP adapters of :mod:`prism_memory.embedders`."""


class EmbeddingModelMismatchError(PrismMemoryError):
    """The embedder's model is not the one the thread's entries were embedded with (SQLSTATE PM018).

    Each thread records the model identity and width of the embedder that wrote it
    (``use_embedding_model_v1``); a write or recall with another model of the same width would mix two
    vector spaces, so it is refused and nothing changes. Switch a thread's model with
    :meth:`~prism_memory.memory.Memory.rebuild_index` run with the new embedder (docs/embedders.md, "The embedding-model guard").
    """


class EntryNotFoundError(PrismMemoryError, LookupError):
    """``set_consent``/``correct`` named an entry id that this thread does not hold."""


class LineageLimitError(LimitExceededError):
    """The invalidation walk passed its cap (depth 8, 256 edges); nothing changed."""


class LifecycleOrderError(PrismMemoryError):
    """A body delete was attempted before its tombstone landed (``invalidate_v1`` must come first)."""


class IdentityMismatchError(PrismMemoryError, PermissionError):
    """``export_memory(identity=...)`` is not exactly this memory's tenant/resource/thread."""


class InvalidCursorError(ValidationError):
    """A pagination cursor was not produced by this package."""


class OperationTimeoutError(PrismMemoryError, TimeoutError):
    """A bounded operation (export, rebuild) ran past its ``max_ms``; nothing was written by it."""


class ConfigurationError(PrismMemoryError):
    """The memory or store was configured inconsistently (e.g. an invalid JSON Schema)."""


class InvalidScoringError(ValidationError):
    """``RecallScoringOptions`` out of range: a weight not finite or outside [0, 1], or ``half_life_ms``
    missing (with a recency weight), not positive or not finite."""


class InvalidAuthorizationError(ValidationError):
    """An ACL read's principal or group ids are missing or malformed (not non-blank strings of at most 256 bytes)."""


class AccessVersionConflict(PrismMemoryError):
    """``set_source_access`` gave an access version lower than the one stored; nothing changed."""


class WorkingMemoryVersionConflict(PrismMemoryError):
    """``update_working(expected_version=...)`` did not match the stored version; nothing changed."""


class TenantAccessDeniedError(PrismMemoryError, PermissionError):
    """The database role the store connects as is bound to other tenants (SQLSTATE PM016); nothing was read or
    written. Bind roles with :func:`prism_memory.schema.grant_app_role` (``tenants=``); docs/security.md."""


class SchemaVersionError(PrismMemoryError):
    """The database schema is missing, older than this package needs, or newer than it understands."""


class StoreError(PrismMemoryError):
    """An unexpected database failure, wrapped; the original is ``__cause__``."""


class StoreUnavailableError(StoreError):
    """The database cannot be reached now; the psycopg or psycopg_pool exception is ``__cause__``.

    Raised when no pooled connection came free, or none could be made, within
    the pool's timeout (the server is down or restarting, or every connection
    is busy: ``PoolTimeout``), or when the connection was lost while the call
    ran (the server terminated it, shut down or crashed). A read was sent again
    once before this is raised; a write never is, so a write that raises this
    after it was sent may or may not have committed (``docs/errors.md``).
    Calls made after the server is back succeed: retry later.
    """


class StoreClosedError(StoreError):
    """The store's connection pool is closed (``await stores.close()``); ``PoolClosed`` is ``__cause__``.

    Every later call raises it; unlike :class:`StoreUnavailableError`, retrying never helps.
    """


#: SQLSTATEs raised by the SQL functions, and the type each maps to.
SQLSTATE_ERRORS: dict[str, type[PrismMemoryError]] = {
    "PM001": InvalidScopeError,
    "PM002": InvalidEntryError,
    "PM003": InvalidEmbeddingError,
    "PM004": DimensionMismatchError,
    "PM005": LimitExceededError,
    "PM006": PayloadTooLargeError,
    "PM007": WorkingMemoryValidationError,
    "PM008": InvalidQueryError,
    "PM009": WorkingMemoryVersionConflict,
    "PM010": LineageLimitError,
    "PM011": EntryNotFoundError,
    "PM012": LifecycleOrderError,
    "PM013": InvalidAuthorizationError,
    "PM014": AccessVersionConflict,
    "PM015": InvalidScoringError,
    "PM016": TenantAccessDeniedError,
    "PM017": ConfigurationError,
    "PM018": EmbeddingModelMismatchError,
    "PM019": InvalidFilterError,
}
