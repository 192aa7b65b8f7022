"""The checks Python makes itself on values: types, encodings, ids and scopes, the embedding model, scoring.

What lives here, and why it is Python's job:

* what SQL cannot see or cannot even be sent: Python types (a ``str`` where
  ``text`` is sent, an ``int`` that fits the parameter's integer type, a
  ``bool`` that is not an ``int``, timezone-aware datetimes) and encodings
  (:mod:`prism_memory.jsoncodec`);
* :func:`check_id`, the one definition of the id rule (non-blank, at most N
  UTF-8 bytes) on this side; ``is_id_v1`` is the SQL side's;
* what the facade must check before anything is embedded (an embedding
  costs a model call): scope ids, the embedding model, the recall scoring
  options.

An entry's own checks are in :mod:`prism_memory.entry_checks`, a store call's
arguments in :mod:`prism_memory.store_arguments` (the RAG store's in
:mod:`prism_memory.rag_arguments`). The rules that only mirror SQL for the
emulator live in :mod:`prism_memory.emulator.rules`; the Postgres adapters
leave those rules to the SQL functions' own SQLSTATEs
(:data:`prism_memory.errors.SQLSTATE_ERRORS`). Each docstring names the SQL
function whose rule it shares.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone

from .errors import (
    ConfigurationError,
    DimensionMismatchError,
    InvalidEntryError,
    InvalidScopeError,
    InvalidScoringError,
    LimitExceededError,
)
from .jsoncodec import check_storable_text, text_bytes
from .types import EmbeddingModel, RecallScoringOptions, Scope

#: UTF-8 bytes of a tenant, resource, thread, RAG scope, principal or group id (``assert_scope_v2``).
MAX_SCOPE_ID_BYTES = 256
#: UTF-8 bytes of an entry, chunk, source or lineage source id (``remember_v3``, ``rag_upsert_v1``).
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


def check_bool(value: object, what: str, error: type[Exception] = LimitExceededError) -> bool:
    """Return ``value`` if it is a ``bool``, else raise ``error`` (Postgres would cast ``1`` or ``'yes'`` to true).

    An option or flag of a call or of a memory's configuration raises :class:`LimitExceededError`, as
    an ``int`` option out of range or of another type does; a field of an entry passes
    :class:`InvalidEntryError`, as every other fault of an entry raises.
    """
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
#: The latest time stored (``assert_time_v1``): a day inside Python's ``datetime``, whatever the time zone.
LATEST_TIME = datetime(9999, 12, 30, tzinfo=timezone.utc)


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
        in_range = _EARLIEST <= value.astimezone(timezone.utc) <= LATEST_TIME
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


# --- Labels -------------------------------------------------------------------


def entry_label(position: int, item_id: object = None, kind: str = "entry") -> str:
    """Where in a batch an error is, the one convention of every message (and of the SQL functions'):
    ``entry 2 (b)``, the item's 1-based position and its id, or ``entry 2`` while the id is not known to be
    usable (``item_id`` ``None``). A field follows after a colon: ``entry 2 (b): embedding[0] is not finite``."""
    return f"{kind} {position}" if item_id is None else f"{kind} {position} ({item_id})"


def embedding_labels(ids: Sequence[str]) -> list[str]:
    """The label of each entry's embedding in a batch of entries with ``ids``: ``entry 2 (b): embedding``."""
    return [f"{entry_label(position, entry_id)}: embedding" for position, entry_id in enumerate(ids, start=1)]


# --- The embedding model and the scoring options ------------------------------

#: UTF-8 bytes of an embedding model id (``use_embedding_model_v1``).
MAX_MODEL_ID_BYTES = 256


def check_model(model: object, widths: Sequence[int] = ()) -> EmbeddingModel | None:
    """A store call's ``model`` (the embedding-model guard): ``None``, or an :class:`EmbeddingModel` whose
    ``model_id`` passes the id rule (:func:`check_id`, 256 bytes) and whose ``dimensions`` is an ``int`` in
    1..16000, else :class:`ConfigurationError` (``use_embedding_model_v1`` and ``recall_v4``
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
