"""Value types shared by the public API, the Postgres caller and the emulator."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from .errors import LimitExceededError


@dataclass(frozen=True, slots=True)
class Scope:
    """Isolation key of every operation.

    ``thread_id`` is ``None`` only for resource-scoped working memory; semantic
    operations require it.
    """

    tenant_id: str
    resource_id: str
    thread_id: str | None = None


CONSENT_SOURCES = ("user", "agent", "system")
CONSENT_SCOPES = ("thread", "profile", "user")
#: The consent scopes that let an entry leave its thread: ``recall(..., across_threads=True)`` in another
#: thread of its tenant and resource finds it (``leaves_thread_v1``); ``"thread"`` and legacy entries stay.
TRAVELLING_SCOPES = ("profile", "user")


@dataclass(frozen=True, slots=True)
class MemoryConsent:
    """Who provided an entry and whether it may be used.

    ``source``: ``"user"``, ``"agent"`` or ``"system"``; ``scope``: how far
    the entry may travel: ``"thread"`` (its own thread only), ``"profile"``
    (a fact for the user's profile) or ``"user"`` (anything of the user's),
    both of which ``recall(..., across_threads=True)`` finds from every thread
    of the same tenant and resource, never beyond it
    (:data:`TRAVELLING_SCOPES`, docs/consent-and-lifecycle.md); ``visible=False``
    or a ``revoked_at`` keeps the entry out of recall, injection and export.
    ``granted_at``/``revoked_at`` are timezone-aware datetimes (audit times).
    An entry written without consent is *legacy*: it behaves as
    user / thread / visible (it stays in its thread), but ``require_consent``
    and exports drop it.
    """

    source: str = "user"
    scope: str = "thread"
    visible: bool = True
    granted_at: datetime | None = None
    revoked_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ConsentChange:
    """A ``set_consent`` request: ``None`` leaves a field as it is.

    ``visible=False`` (or a ``revoked_at``) revokes and invalidates the entry's
    dependents; ``visible=True`` grants again and clears ``revoked_at``.
    """

    visible: bool | None = None
    source: str | None = None
    scope: str | None = None
    granted_at: datetime | None = None
    revoked_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class MemoryLineage:
    """Where a derived entry comes from: at most 32 ``source_ids`` of entries in the same thread.

    Stored as ``metadata["_lineage"] = {"sourceIds": [...], "reason": ...}``.
    The entry is excluded while any source is revoked, invisible, held,
    deleted or corrected: a fact derived from several sources stays injectable
    only while none of them is invalidated.
    """

    source_ids: tuple[str, ...]
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One entry to :meth:`Memory.remember`.

    ``id``: non-empty, at most 512 bytes, unique within the thread.
    ``text``: non-empty after stripping whitespace.
    ``metadata``: a JSON object (``dict[str, JSON]``).
    ``sequence``: order within the thread; ``None`` keeps a stored entry's
    sequence, or appends a new entry after the thread's highest sequence.
    ``importance``: finite; clamped to ``[0, 1]`` at write (it wins over a reflection).
    ``reflection``: a JSON object handed, after secret redaction, to the
    memory's ``importance_from`` hook at write time to derive ``importance``;
    never persisted.
    ``expires_at`` (timezone-aware, after now) or ``ttl`` (a ``timedelta``,
    more than 0 and at most 36,500 days, counted from the write's time): when
    the entry stops being recalled, exported or injected, until the
    retention sweep deletes it; give one or neither (a stored entry then keeps
    its own). docs/consent-and-lifecycle.md, "Expiry".
    ``occurred_at`` (timezone-aware): when the thing the entry tells of happened or was said, its event time,
    which recall's and export's ``occurred_after``/``occurred_before`` windows read; ``None`` keeps a stored
    entry's, and a new entry without one counts its ``created_at``.
    """

    id: str
    text: str
    metadata: dict[str, Any] | None = None
    sequence: int | None = None
    importance: float | None = None
    consent: MemoryConsent | None = None
    lineage: MemoryLineage | None = None
    reflection: dict[str, Any] | None = None
    expires_at: datetime | None = None
    ttl: timedelta | None = None
    occurred_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class EmbeddingModel:
    """The identity of the model that embeds a thread's entries: what the embedding-model guard records.

    ``model_id``: the embedder's ``model_id`` (a non-blank string of at most 256 UTF-8 bytes, e.g.
    ``"sentence-transformers/all-MiniLM-L6-v2"``); ``dimensions``: its width. Two embedders with the same
    ``model_id`` and width are taken to share one vector space (docs/embedders.md, "The embedding-model guard").
    """

    model_id: str
    dimensions: int


@dataclass(frozen=True, slots=True)
class EntryRecord:
    """An entry ready for a store: validated and redacted, with its embedding (``list[float]``).

    ``metadata`` already holds ``_lineage`` when the entry has a lineage;
    ``consent`` ``None`` keeps a stored entry's consent (legacy for a new one),
    and ``expires_at`` and ``ttl`` both ``None`` its expiry (none for a new one), ``occurred_at`` ``None`` its
    event time (its ``created_at`` for a new one).
    """

    id: str
    text: str
    embedding: list[float]
    metadata: dict[str, Any]
    sequence: int | None
    importance: float | None
    consent: MemoryConsent | None = None
    expires_at: datetime | None = None
    ttl: timedelta | None = None
    occurred_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecord:
    """A stored entry as the lifecycle operations return it (no embedding).

    ``consent`` is ``None`` for a legacy entry; ``legal_hold`` is set by ``forget(hold=True)``;
    ``thread_id`` names the entry's thread in a resource-wide read (``export_resource``,
    ``VectorStore.list_by_resource``) and is ``None`` where the thread is the caller's own;
    ``occurred_at`` is its event time: the one it was written with, else its ``created_at`` (every store read
    fills it).
    """

    id: str
    text: str
    metadata: dict[str, Any]
    sequence: int
    importance: float | None
    consent: MemoryConsent | None
    legal_hold: bool
    created_at: datetime
    updated_at: datetime
    thread_id: str | None = None
    occurred_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ExportPage:
    """One export page: ``entries`` in (sequence, id) order, their JSON size in ``bytes``, and the cursor of the next page (``None`` at the end)."""

    entries: list[MemoryRecord]
    bytes: int
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class RebuildResult:
    """One ``rebuild_index`` page: entries re-embedded, and the cursor to resume from (``None`` when done)."""

    rebuilt: int
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """The stored retention policies that cover a memory's entries: the resource's and the thread's maximum age
    in 24-hour days (``None``: no such policy). An entry older than either is expired at once."""

    resource_max_age_days: float | None
    thread_max_age_days: float | None


@dataclass(frozen=True, slots=True)
class ResourceErasure:
    """One ``forget_resource`` batch: bodies ``deleted`` (the batch's and their lineage dependents'), entries
    ``held`` (kept under legal hold), and the cursor of the next batch (``None`` when the resource is done)."""

    deleted: int
    held: int
    next_cursor: str | None


class ForgetResult(int):
    """What one ``forget`` did: an ``int``, the bodies deleted (as ``forget`` always returned), with

    * ``deleted``: that count again;
    * ``kept``: the ids it could not delete because a write stored them again after the forget
      tombstoned them (a ``remember`` of the same id that committed while the forget ran), in code-point
      order; each is stored as that write left it, and every other id was still forgotten;
    * ``not_found``: the ids given that named no entry of the thread (never stored there, already
      deleted, or in another thread), in the order given.

    Equal to, and usable as, the plain count.
    """

    deleted: int
    kept: list[str]
    not_found: list[str]

    def __new__(cls, deleted: int, kept: Sequence[str] = (), not_found: Sequence[str] = ()) -> ForgetResult:
        result = super().__new__(cls, deleted)
        result.deleted = int(deleted)
        result.kept = list(kept)
        result.not_found = list(not_found)
        return result

    def __repr__(self) -> str:
        return f"ForgetResult(deleted={self.deleted}, kept={self.kept!r}, not_found={self.not_found!r})"

    def __str__(self) -> str:  # printed as the count it always was
        return str(self.deleted)


@dataclass(frozen=True, slots=True)
class RetentionResult:
    """One ``apply_retention`` sweep: entries ``deleted`` and ``scanned`` (held entries are scanned, never deleted)."""

    deleted: int
    scanned: int


@dataclass(frozen=True, slots=True)
class RecallScoringOptions:
    """Opt-in composite recall scoring.

    ``recency_weight`` and ``importance_weight``: finite, in [0, 1];
    ``half_life_ms``: the recency half-life in milliseconds, positive and
    finite, required with a recency weight. Similarity keeps what remains of
    1; weights summing over 1 are scaled down to sum 1 (similarity 0). The
    top ``top_k * 4`` candidates by the default score are re-ranked by
    ``w_similarity * (similarity + lexical_weight * lexical) + w_recency * 0.5 **
    (age_ms / half_life_ms) + w_importance * importance`` (importance 1.0 when
    unset; age from ``created_at``) inside the recall SQL function. Bad values
    raise :class:`InvalidScoringError`.
    """

    recency_weight: float | None = None
    importance_weight: float | None = None
    half_life_ms: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallSelection:
    """What a read keeps besides its gates, applied before the ``top_k`` cut (docs/api.md, "Filters and time
    windows"): entries whose metadata satisfies ``filter`` (a metadata filter, checked by
    :func:`prism_memory.filters.check_filter`; ``None``: every entry), whose event time (``occurred_at``, else
    ``created_at``) is in ``[occurred_after, occurred_before)`` and whose ``created_at`` is in
    ``[created_after, created_before)``; each bound a timezone-aware ``datetime`` or ``None`` (open)."""

    filter: dict[str, Any] | None = None
    occurred_after: datetime | None = None
    occurred_before: datetime | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallHit:
    """A recall hit. Without scoring ``score = similarity + lexical_weight * lexical`` (docs/api.md, "Recall score").

    With :class:`RecallScoringOptions`, ``score`` is the blended score,
    ``recency`` (``0.5 ** (age_ms / half_life_ms)``, ``None`` without a
    half-life) and ``importance`` (the value used, 1.0 when unset) its other
    components; without scoring ``recency`` is ``None`` and ``importance`` is
    as stored. ``thread_id``/``resource_id`` say where the entry lives: the
    memory's own thread, another thread of its resource (``across_threads``),
    or a parent thread that shared it. ``created_at``/``updated_at``: when the
    entry was written and last changed (aware datetimes)."""

    id: str
    text: str
    metadata: dict[str, Any]
    sequence: int
    score: float
    similarity: float
    lexical: float
    importance: float | None = None
    thread_id: str | None = None
    resource_id: str | None = None
    recency: float | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AdjacentEntry:
    """An entry within ``message_range`` sequences of a hit, from the hit's own thread."""

    id: str
    text: str
    metadata: dict[str, Any]
    sequence: int
    importance: float | None = None
    thread_id: str | None = None
    resource_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HitExplanation:
    """Why a hit ranks where it does: its score components and the normalised weights applied.

    ``weights`` is ``{"similarity": ..., "recency": ..., "importance": ...}``
    with scoring, ``None`` without (then ``score = similarity + lexical_weight * lexical``).
    """

    id: str
    similarity: float
    lexical: float
    recency: float | None
    importance: float | None
    score: float
    weights: dict[str, float] | None


@dataclass(frozen=True, slots=True)
class RecallExplanation:
    """``recall(..., explain=True)``: per-hit components, and how many entries each gate removed.

    ``removed`` maps ``scope`` (entries of other threads that may not take
    part: shared entries of another embedding width and, with
    ``across_threads``, entries of the resource's other threads that their
    consent scope keeps there), ``hold`` (legal hold), ``consent``
    (invisible, revoked, or legacy under ``require_consent``) and
    ``invalidation`` (tombstoned) to counts over the thread's entries, the
    entries live grants name and, with ``across_threads``, the entries of the
    resource's other threads (nothing else of another thread); each entry
    counts once, at the first gate it fails in that order.
    """

    hits: list[HitExplanation]
    removed: dict[str, int]


@dataclass(frozen=True, slots=True)
class RecallResult:
    """``hits`` ordered by score desc, sequence asc, id asc; ``adjacent`` by sequence, id;
    ``explanation`` only with ``explain=True``."""

    hits: list[RecallHit]
    adjacent: list[AdjacentEntry]
    explanation: RecallExplanation | None = None


@dataclass(frozen=True, slots=True)
class RememberResult:
    """Outcome of :meth:`Memory.remember`: ``accepted`` entries, ``pending`` still being indexed, ``done``."""

    accepted: int
    pending: int
    done: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkingMemoryRecord:
    """A versioned working-memory document; ``version`` starts at 1 and grows by 1 per update."""

    tenant_id: str
    resource_id: str
    thread_id: str | None
    data: dict[str, Any]
    version: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class RagChunk:
    """One chunk to :meth:`RagVectorStore.upsert <prism_memory.stores.RagVectorStore.upsert>`.

    ``id``: non-blank, at most 512 bytes, unique within a scope's generation.
    ``source_id``: the document the chunk comes from (non-blank, at most 512
    bytes); document ACL is granted per source. ``text``: non-blank.
    ``embedding``: ``list[float]`` of the store's dimension. ``metadata``: a
    JSON object that ``filter`` matches by containment. ``access_version``:
    the source permission version the content was indexed under (an integer
    >= 0, or ``None``); under ACL the chunk is readable only once the source's
    grants are at that version or newer.
    """

    id: str
    source_id: str
    text: str
    embedding: list[float]
    metadata: dict[str, Any] | None = None
    access_version: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RagMatch:
    """A ``query`` or ``lexical_query`` result.

    ``score``: cosine similarity in [-1, 1] for ``query``; for
    ``lexical_query``, the share of the query's distinct lexical terms the
    chunk holds, in (0, 1]. Results are ordered by score desc, then id.
    """

    id: str
    source_id: str
    text: str
    metadata: dict[str, Any]
    score: float
    generation: int
    access_version: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredChunk:
    """A chunk as ``get_by_source`` returns it, with its embedding (``list[float]``, as stored in float32)."""

    id: str
    source_id: str
    text: str
    metadata: dict[str, Any]
    embedding: list[float]
    generation: int
    access_version: int | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class RagAccessConstraint:
    """A host-verified reader for document ACL.

    Passed as ``authorization=``: reads return only chunks whose source grants
    ``principal_id`` or one of ``group_ids`` (at most 1,024) access, checked
    inside the SQL query before ranking. The host must have authenticated the
    principal and resolved its groups; the store trusts them. A metadata
    ``filter`` is never treated as ACL.
    """

    principal_id: str
    group_ids: tuple[str, ...] = ()


#: Hard caps: no option or limit may exceed these.
HARD_CAPS: dict[str, int] = {
    "top_k": 32,
    "message_range": 4,
    "embed_batch": 128,
    "entry_bytes": 8 * 1024 * 1024,
    "working_memory_bytes": 1024 * 1024,
    "query_bytes": 64 * 1024,
    "remember_entries": 10_000,
    "injected_tokens": 8000,
}


@dataclass(frozen=True, slots=True)
class MemoryLimits:
    """Per-memory limits; each must be at least its minimum and at most its hard cap.

    ``top_k`` (default hits, 1..32), ``message_range`` (default adjacency,
    0..4), ``embed_batch`` (texts per embedder call, 1..128), ``entry_bytes`` (UTF-8 bytes of text plus
    JSON metadata per entry, at most 8 MiB), ``working_memory_bytes`` (UTF-8
    bytes of the JSON document, at most 1 MiB), ``query_bytes`` (UTF-8 bytes of
    a recall query, at most 64 KiB), ``remember_entries`` (entries per
    ``remember`` call, at most 10,000), ``injected_tokens`` (tokens a context
    provider may inject per call, at most 8,000; counted as docs/api.md, "Context
    injection", says).

    Raises :class:`LimitExceededError` when a value is not an ``int`` or is out of range.
    """

    top_k: int = 8
    message_range: int = 0
    embed_batch: int = 64
    entry_bytes: int = 1024 * 1024
    working_memory_bytes: int = 64 * 1024
    query_bytes: int = 16 * 1024
    remember_entries: int = 1000
    injected_tokens: int = 2000

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            minimum = 0 if item.name == "message_range" else 1
            check_int_option(item.name, value, minimum, HARD_CAPS[item.name])


def check_int_option(name: str, value: Any, minimum: int, maximum: int) -> int:
    """Return ``value`` if it is an ``int`` in ``[minimum, maximum]``, else raise :class:`LimitExceededError`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise LimitExceededError(f"{name} must be an integer, got {value!r}")
    if value < minimum or value > maximum:
        raise LimitExceededError(f"{name} must be between {minimum} and {maximum}, got {value}")
    return value


__all__ = [
    "AdjacentEntry",
    "CONSENT_SCOPES",
    "CONSENT_SOURCES",
    "ConsentChange",
    "EmbeddingModel",
    "EntryRecord",
    "ExportPage",
    "HARD_CAPS",
    "HitExplanation",
    "MemoryConsent",
    "MemoryEntry",
    "MemoryLimits",
    "MemoryLineage",
    "MemoryRecord",
    "RagAccessConstraint",
    "RagChunk",
    "RagMatch",
    "RebuildResult",
    "RecallExplanation",
    "RecallHit",
    "RecallResult",
    "RecallScoringOptions",
    "RecallSelection",
    "RememberResult",
    "ForgetResult",
    "ResourceErasure",
    "RetentionPolicy",
    "RetentionResult",
    "Scope",
    "StoredChunk",
    "TRAVELLING_SCOPES",
    "WorkingMemoryRecord",
    "check_int_option",
]
