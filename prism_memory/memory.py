"""The public facade: :func:`create_memory` and :class:`Memory`, the working memory and semantic recall of one
tenant / resource / thread scope.

:class:`Memory` is assembled from groups of calls: this module holds working memory, remember, recall,
context injection, delegation and share grants, and the index rebuild; :mod:`prism_memory.consent`,
:mod:`prism_memory.resource` and :mod:`prism_memory.retention` the others, on the state and scope checks
of :class:`~prism_memory.memory_base.MemoryBase`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from . import lifecycle
from .checks import (
    AGENT_ID,
    AGENT_SEGMENT,
    check_aware,
    check_bool,
    check_model,
    check_scope,
    check_scope_id,
    check_scoring,
    check_shared_ids,
    check_unique_ids,
    entry_label,
)
from .config import InvalidationHook, MemoryConfig, utc_now
from .consent import ConsentOperations
from .context import Extractor, MemoryContextProvider, WorkingMemoryProcessor
from .embedding import Embedder, embed_query, embedding_model
from .entry_checks import check_entry, check_expiry_range, to_entry
from .errors import (
    ConfigurationError,
    InvalidEntryError,
    InvalidQueryError,
    InvalidScopeError,
    LimitExceededError,
    PayloadTooLargeError,
)
from .export import REBUILD_LIMITS, decode_cursor
from .jsoncodec import json_document, text_bytes
from .redaction import Redaction, Redactor
from .resource import ResourceOperations
from .retention import RetentionOperations
from .scoring import LEXICAL_WEIGHT, check_lexical_weight
from .selection import select
from .stores import VectorStore, WorkingStore, default_stores
from .types import (
    HARD_CAPS,
    MemoryEntry,
    MemoryLimits,
    RebuildResult,
    RecallResult,
    RecallScoringOptions,
    RecallSelection,
    RememberResult,
    Scope,
    WorkingMemoryRecord,
    check_int_option,
)
from .working import WorkingMemoryHook, WorkingMemoryValidator, render_template


class Memory(ConsentOperations, ResourceOperations, RetentionOperations):
    """Working memory and semantic recall for one tenant / resource / thread scope.

    Build it with :func:`create_memory`. Every method is a coroutine. Writes
    validate all input first and raise a :class:`ValidationError` subclass
    before anything is embedded or written. Consent, lineage invalidation,
    legal holds and retention are enforced by the store (the SQL functions on
    Postgres). This class checks each call's input, waits for pending
    background writes where the call must see them (:class:`WriteQueue`), and
    hands the lifecycle operations to :mod:`prism_memory.lifecycle`, which
    orders the store calls and runs the host hooks. Its calls on consent,
    correction, erasure and export of the thread come from
    :class:`~prism_memory.consent.ConsentOperations`, those on the whole
    resource from :class:`~prism_memory.resource.ResourceOperations`, and
    retention from :class:`~prism_memory.retention.RetentionOperations`.
    """

    # -- working memory -------------------------------------------------

    async def get_working(self) -> WorkingMemoryRecord | None:
        """The scope's working-memory record (thread-scoped when the memory has a thread), or ``None``."""
        record = await self._config.working_store.get_working(self._config.scope)
        return None if record is None else dataclasses.replace(record, data=self._config.redaction.value(record.data))

    async def update_working(self, data: dict[str, Any], expected_version: int | None = None) -> WorkingMemoryRecord:
        """Replace the working-memory document; returns the record with ``version`` + 1.

        ``data`` is redacted, then must be a JSON object that passes the schema
        and hook given to :func:`create_memory` and fits
        ``limits.working_memory_bytes`` (:class:`WorkingMemoryValidationError` /
        :class:`PayloadTooLargeError`). With ``expected_version`` (0 for "no
        record yet"), a different stored version raises
        :class:`WorkingMemoryVersionConflict` and nothing changes.
        """
        checked = self._config.validator.check(self._config.redaction.value(data) if isinstance(data, dict) else data)
        if expected_version is not None:
            check_int_option("expected_version", expected_version, 0, 2**63 - 1)
        return await self._config.working_store.update_working(self._config.scope, checked, expected_version)

    async def render_working(self) -> str:
        """The working memory rendered through ``working_memory_template`` (compact JSON without one; ``""`` when unset)."""
        record, template = await self.get_working(), self._config.template
        if record is None:
            return "" if template is None else render_template(template, {})
        if template is None:
            return json.dumps(record.data, ensure_ascii=False, separators=(",", ":"))
        return render_template(template, record.data)

    # -- semantic memory ------------------------------------------------

    def _importance(self, entry: MemoryEntry, position: int) -> MemoryEntry:
        """Derive ``importance`` from the (already redacted) ``reflection`` with ``importance_from``, then drop the
        reflection: it is never persisted. A direct importance wins."""
        if entry.reflection is None:
            return entry
        where = entry_label(position, entry.id)
        json_document(entry.reflection, f"{where}: reflection")
        importance_from = self._config.importance_from
        if entry.importance is not None or importance_from is None:
            return dataclasses.replace(entry, reflection=None)
        try:
            derived = importance_from(copy.deepcopy(entry.reflection))
        except Exception as exc:
            raise InvalidEntryError(f"{where}: importance_from raised {type(exc).__name__}") from exc
        try:
            finite = not isinstance(derived, bool) and isinstance(derived, (int, float)) and math.isfinite(float(derived))
        except OverflowError:
            finite = False
        if not finite:
            raise InvalidEntryError(f"{where}: importance_from returned {derived!r}, not a finite number")
        return dataclasses.replace(entry, importance=min(1.0, max(0.0, float(derived))), reflection=None)

    async def remember(
        self, entries: Iterable[MemoryEntry | Mapping[str, Any]], wait: bool = False
    ) -> RememberResult:
        """Redact, embed and store ``entries`` in this thread.

        Every entry is redacted, then checked (:class:`InvalidEntryError`,
        :class:`PayloadTooLargeError`, :class:`LimitExceededError` for more
        than ``limits.remember_entries``, or an ``expires_at`` not after the
        memory's clock, a ``ttl`` not in (0, 36,500 days] or one ending after
        9999-12-30 00:00 UTC); nothing is written if one fails.
        With ``wait=False`` (the default) indexing runs in the
        background: the result has ``pending`` > 0 and ``done=False``; await
        :meth:`flush` to finish it and re-raise a failure (no other call raises
        it; :attr:`failed_writes` counts them). With ``wait=True``
        embedding errors (:class:`InvalidEmbeddingError`,
        :class:`DimensionMismatchError`, :class:`EmbeddingFailedError`) raise
        here. A batch is written all or nothing. An entry whose lineage source
        is already invalidated is stored invalidated.
        """
        scope = self._thread_scope()
        redaction = self._config.redaction
        items = [redaction.entry(to_entry(entry, position), position) for position, entry in enumerate(entries, start=1)]
        limits = self._config.limits
        if len(items) > limits.remember_entries:
            raise LimitExceededError(f"{len(items)} entries exceed limits.remember_entries={limits.remember_entries}")
        metadata = [check_entry(item, position, limits.entry_bytes) for position, item in enumerate(items, start=1)]
        check_unique_ids([item.id for item in items])
        check_expiry_range(items, self._config.now())
        items = [self._importance(item, position) for position, item in enumerate(items, start=1)]
        if not items:
            return RememberResult(0, self._writes.pending, self._writes.idle)
        job = lifecycle.write_entries(self._config, self._writes, scope, items, metadata)
        if wait:
            await job
            return RememberResult(len(items), self._writes.pending, self._writes.idle)
        self._writes.start(job, len(items))
        return RememberResult(len(items), self._writes.pending, False)

    async def recall(
        self,
        query: str,
        top_k: int | None = None,
        message_range: int | None = None,
        require_consent: bool | None = None,
        share_from_parent_thread_id: str | None = None,
        scoring: RecallScoringOptions | None = None,
        explain: bool = False,
        across_threads: bool = False,
        filter: dict[str, Any] | None = None,
        occurred_after: datetime | None = None,
        occurred_before: datetime | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        lexical_weight: float | None = None,
    ) -> RecallResult:
        """Top-``top_k`` injectable entries of this thread for ``query``, plus adjacent entries.

        ``filter`` (a metadata filter, docs/api.md "Metadata filters") and the half-open windows on the
        entries' event time (``occurred_after``/``occurred_before``; an entry's ``occurred_at``, else its
        ``created_at``) and write time (``created_after``/``created_before``), timezone-aware datetimes,
        restrict hits and adjacent entries alike, inside the database before the ``top_k`` cut: the hits are
        the unrestricted ranking's among the entries they keep, min(``top_k``, matches) of them.
        :class:`InvalidFilterError` for a bad filter, :class:`InvalidQueryError` for a bad bound.
        ``lexical_weight`` (default: the memory's) weighs the lexical leg of the score, finite, 0 to 10
        (:class:`InvalidScoringError`).

        ``across_threads=True`` searches every thread of this memory's tenant
        and resource: this thread's entries and, from the other threads, the
        entries whose consent scope lets them leave their thread (``"profile"``
        or ``"user"``; ``"thread"`` and legacy entries stay where they are),
        under the same gate. Resources are matched exactly, so another
        resource, a delegated agent's derived one included, is never searched.
        Each hit names its thread; adjacent entries come from the hit's own
        thread (docs/consent-and-lifecycle.md, "Consent scope").

        ``scoring`` (:class:`RecallScoringOptions`) blends recency and
        importance into the ranking inside the database (README, "Composite
        scoring"); bad options raise :class:`InvalidScoringError`.
        ``explain=True`` adds ``result.explanation``: each hit's components and
        how many entries each gate removed.

        The single consent gate: invisible, revoked, invalidated and held
        entries never come back, and with ``require_consent`` (default: the
        memory's) neither do legacy entries without explicit consent. ``top_k``
        defaults to ``limits.top_k`` (1..32) and ``message_range`` to
        ``limits.message_range`` (0..4). With ``share_from_parent_thread_id``
        the entries that thread shared with this one (:meth:`share_with`) take
        part too, while the grant is live; adjacency never reaches an entry
        that was not shared. Waits for this memory's pending writes first.
        Raises :class:`InvalidQueryError` for a blank query or one with a NUL
        or lone surrogate, :class:`PayloadTooLargeError` for one over
        ``limits.query_bytes``, and :class:`LimitExceededError` for an option
        out of range. Score and ordering: README, "Recall score".
        The query is embedded with the embedder's ``embed_query`` when it has one (else ``embed``);
        an embedder with a ``model_id`` other than the one the thread recorded (same width) raises
        :class:`EmbeddingModelMismatchError` (docs/embedders.md, "The embedding-model guard").
        """
        scope = self._thread_scope()
        limits = self._config.limits
        top_k = check_int_option("top_k", limits.top_k if top_k is None else top_k, 1, HARD_CAPS["top_k"])
        message_range = check_int_option(
            "message_range", limits.message_range if message_range is None else message_range, 0, HARD_CAPS["message_range"])
        require_consent = self._config.require_consent if require_consent is None else require_consent
        check_bool(require_consent, "require_consent")
        scoring = check_scoring(scoring)
        selection = select(filter, occurred_after, occurred_before, created_after, created_before)
        lexical_weight = check_lexical_weight(self._config.lexical_weight if lexical_weight is None else lexical_weight)
        for name, flag in (("explain", explain), ("across_threads", across_threads)):
            check_bool(flag, name)
        query = self._recall_query(query)
        await self._writes.settle("recall")
        vector = await embed_query(self._config.embedder, query)
        if share_from_parent_thread_id is not None:
            check_scope_id("share_from_parent_thread_id", share_from_parent_thread_id)
        result = await self._config.vector_store.recall(
            scope, vector, query, top_k, message_range, require_consent, share_from_parent_thread_id,
            now=self._config.now(), scoring=scoring, explain=explain, across_threads=across_threads,
            model=self._config.model, selection=selection, lexical_weight=lexical_weight,
        )
        redaction = self._config.redaction
        if not redaction.active:
            return result
        return RecallResult(
            [redaction.record(hit) for hit in result.hits], [redaction.record(entry) for entry in result.adjacent],
            result.explanation,
        )

    def _recall_query(self, query: object) -> str:
        """``query`` checked and redacted: :class:`InvalidQueryError` for a blank query or one with a NUL or lone
        surrogate, :class:`PayloadTooLargeError` for one over ``limits.query_bytes``."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidQueryError("the recall query must be a non-blank string")
        size = len(text_bytes(query, "the recall query", InvalidQueryError))
        if size > self._config.limits.query_bytes:
            raise PayloadTooLargeError(
                f"the recall query is {size} bytes, over limits.query_bytes={self._config.limits.query_bytes}")
        redaction = self._config.redaction
        return redaction.text(query) if redaction.active else query

    # -- injection, processors, delegation ------------------------------

    def create_context_provider(
        self,
        *,
        working: bool = True,
        recall: bool = True,
        top_k: int | None = None,
        max_tokens: int | None = None,
        require_consent: bool | None = None,
        scoring: RecallScoringOptions | None = None,
        token_counter: Callable[[str], int] | None = None,
        across_threads: bool = False,
        selection: RecallSelection | None = None,
    ) -> MemoryContextProvider:
        """Inert context blocks for prompts: ``await provider.provide(query)``.

        Working memory is rendered through the template; recall hits come from
        :meth:`recall` (the same consent gate; ``across_threads=True`` recalls
        from every thread of the resource as far as consent allows, see
        :meth:`recall`). Together the blocks hold at
        most ``max_tokens`` tokens (default ``limits.injected_tokens``, at most
        8,000; :class:`LimitExceededError` otherwise), counted by
        ``token_counter`` or :func:`prism_memory.context.count_tokens`. ``selection`` (a
        :class:`RecallSelection`: a metadata filter and time windows) restricts every recall of the provider,
        unless ``provide(query, selection)`` gives another for a turn.
        """
        return MemoryContextProvider(
            self, working=working, recall=recall, top_k=top_k, max_tokens=max_tokens,
            require_consent=require_consent, scoring=check_scoring(scoring), token_counter=token_counter,
            across_threads=across_threads, selection=selection,
        )

    def create_working_memory_processor(self, extract: Extractor) -> WorkingMemoryProcessor:
        """An explicit, host-invoked working-memory updater.

        ``extract(current_document, messages)`` (sync or async) returns the new
        document or ``None``; ``await processor.run(messages)`` stores it,
        schema-checked and versioned like :meth:`update_working`. Nothing runs
        unless the host calls ``run``.
        """
        return WorkingMemoryProcessor(self, extract)

    def for_thread(self, thread_id: str) -> Memory:
        """This memory's tenant and resource in thread ``thread_id``, with the same stores, embedder, limits,
        redaction and hooks (how one server serves many threads of a resource, e.g. the MCP server).

        The returned memory has its own background-write queue. Raises :class:`InvalidScopeError` for a
        thread id that is not a non-blank string of at most 256 bytes, or that holds the reserved
        ``/agent:`` segment (only :meth:`child` makes such ids).
        """
        check_reserved_segment("thread_id", thread_id)
        scope = check_scope(Scope(self._config.scope.tenant_id, self._config.scope.resource_id, thread_id), thread_required=True)
        return Memory(dataclasses.replace(self._config, scope=scope))

    def child(self, agent_id: str) -> Memory:
        """The memory of a delegated agent, isolated from this one.

        Its scope is derived, never chosen by a model: resource
        ``"<resource_id>/agent:<agent_id>"``, thread ``"<thread_id>/agent:<agent_id>"``
        (:func:`derive_child_scope`); stores, embedder, limits, redaction and
        hooks are this memory's. The child reads none of this memory's thread
        until this memory shares entries with it: ``share_with(child.config.scope.thread_id,
        ids, child_resource_id=child.config.scope.resource_id)``, then the child's
        ``recall(..., share_from_parent_thread_id=self.config.scope.thread_id)``.
        ``agent_id``: 1-64 ASCII letters, digits, ``_``, ``.``, ``-``
        (:class:`InvalidScopeError` otherwise, or when this memory has no thread).
        """
        return Memory(dataclasses.replace(self._config, scope=derive_child_scope(self._thread_scope(), agent_id)))

    async def share_with(
        self,
        child_thread_id: str,
        source_ids: Sequence[str],
        expires_at: datetime | None = None,
        child_resource_id: str | None = None,
    ) -> int:
        """Let a child thread recall ``source_ids`` of this (parent) thread .

        The grant is an allow-list of at most 256 entry ids for exactly one
        child (``child_thread_id`` of ``child_resource_id``, by default this
        memory's resource, e.g. a delegated agent's derived resource), in this
        tenant only. It ends at ``expires_at`` (timezone-aware, in the future),
        checked whenever it is read. An empty ``source_ids`` revokes it.
        Returns the number of ids granted. Sibling threads, other tenants and
        expired or revoked grants see nothing.
        """
        scope = self._thread_scope()
        child_resource_id = self._config.scope.resource_id if child_resource_id is None else child_resource_id
        check_scope(Scope(self._config.scope.tenant_id, child_resource_id, child_thread_id), thread_required=True)
        ids = check_shared_ids(source_ids)
        check_aware(expires_at, "expires_at")
        await self._writes.settle("share_with")
        return await self._config.vector_store.share_with(
            scope, child_resource_id, child_thread_id, ids, expires_at, now=self._config.now()
        )

    async def revoke_share(self, child_thread_id: str, child_resource_id: str | None = None) -> None:
        """End the grant to the child thread; same as ``share_with(child, [])``."""
        await self.share_with(child_thread_id, [], child_resource_id=child_resource_id)

    # -- re-embedding -----------------------------------------------------

    async def rebuild_index(
        self,
        cursor: str | None = None,
        batch_size: int = REBUILD_LIMITS["batch_size"][0],
        max_ms: int = REBUILD_LIMITS["max_ms"][0],
    ) -> RebuildResult:
        """Re-embed one page of this thread with the current embedder.

        Reads up to ``batch_size`` (default 32, cap 128) entries after
        ``cursor`` in (sequence, id) order, embeds their stored text and
        writes the new embeddings in one call, within ``max_ms`` (default 10 s,
        cap 60 s, else :class:`OperationTimeoutError` and nothing written).
        Save ``next_cursor`` and call again to resume; ``None`` when done.

        This is how a thread moves to another embedding model: run it with a memory built on the new
        embedder until ``next_cursor`` is ``None``. Its first page switches the thread's recorded model
        (the embedding-model guard), so from then on writes and recalls with the old model are refused
        and those with the new one accepted; until the last page, entries not yet re-embedded are still
        in the old model's vector space, so finish the rebuild before relying on recall.
        """
        thread = self._thread_scope()
        check_int_option("batch_size", batch_size, 1, REBUILD_LIMITS["batch_size"][1])
        check_int_option("max_ms", max_ms, 1, REBUILD_LIMITS["max_ms"][1])
        after = decode_cursor(cursor)
        await self._writes.settle("rebuild_index")
        return await lifecycle.rebuild_index(self._config, thread, after, batch_size, max_ms)


def check_reserved_segment(name: str, value: object) -> None:
    """Raise :class:`InvalidScopeError` when ``value`` (a resource or thread id) holds the reserved ``/agent:``
    segment, which only :meth:`Memory.child` makes."""
    if isinstance(value, str) and AGENT_SEGMENT in value:
        raise InvalidScopeError(
            f"{name} {value!r} holds the reserved segment {AGENT_SEGMENT!r}: only Memory.child() makes such ids"
        )


def derive_child_scope(parent: Scope, agent_id: str) -> Scope:
    """A delegated agent's scope: ``Scope(tenant, "<resource>/agent:<agent_id>", "<thread>/agent:<agent_id>")``.

    Raises :class:`InvalidScopeError` for an ``agent_id`` that is not 1-64
    ASCII letters, digits, ``_``, ``.``, ``-`` (so derived ids never collide),
    for a parent without a thread, or when a derived id passes 256 bytes. The
    ``/agent:`` segment is reserved: give no resource or thread such an id
    yourself.
    """
    if not isinstance(agent_id, str) or not AGENT_ID.fullmatch(agent_id):
        raise InvalidScopeError(f"agent_id must be 1-64 ASCII letters, digits, '_', '.', '-', got {agent_id!r}")
    if not isinstance(parent, Scope) or parent.thread_id is None:
        raise InvalidScopeError("a delegated agent's scope derives from a parent Scope with a thread")
    return check_scope(
        Scope(parent.tenant_id, f"{parent.resource_id}{AGENT_SEGMENT}{agent_id}", f"{parent.thread_id}{AGENT_SEGMENT}{agent_id}"),
        thread_required=True,
    )


def create_memory(
    *,
    tenant_id: str,
    resource_id: str,
    thread_id: str | None = None,
    embedder: Embedder,
    vector_store: VectorStore | None = None,
    working_store: WorkingStore | None = None,
    schema: Mapping[str, Any] | None = None,
    validate_working_memory: WorkingMemoryHook | None = None,
    working_memory_template: str | None = None,
    limits: MemoryLimits | None = None,
    redactor: Redactor | None = None,
    secrets: Sequence[str] | None = None,
    require_consent: bool = False,
    on_invalidate: InvalidationHook | None = None,
    clock: Callable[[], datetime] | None = None,
    importance_from: Callable[[dict[str, Any]], float] | None = None,
    lexical_weight: float = LEXICAL_WEIGHT,
) -> Memory:
    """Create a :class:`Memory` for one scope.

    ``tenant_id`` and ``resource_id`` are required; ``thread_id`` is required
    for semantic operations and optional for working memory (resource-scoped
    without it). Each id is a non-blank string of at most 256 bytes
    (:class:`InvalidScopeError`); ``resource_id`` and ``thread_id`` may not
    hold the reserved ``/agent:`` segment, which only :meth:`Memory.child`
    makes (:class:`InvalidScopeError`). ``embedder`` must provide ``dimensions`` and
    ``embed``; its optional ``embed_query`` embeds recall queries and its optional ``model_id`` (a
    non-blank string of at most 256 bytes, else :class:`ConfigurationError`) is what the
    embedding-model guard records per thread. The stores default to the in-memory emulator. ``schema`` is a
    JSON Schema for working memory, checked here (:class:`ConfigurationError`
    if invalid). ``limits`` defaults to :class:`MemoryLimits()`. ``secrets``
    (literal strings) and ``redactor`` (``str -> str``) redact text, metadata
    and working memory before they are persisted or returned.
    ``require_consent`` makes recall drop legacy entries without explicit
    consent. ``on_invalidate(ids)`` runs after tombstones land and before any
    body is deleted. ``clock`` returns the timezone-aware time stamped on
    writes (default: now, UTC). ``importance_from(reflection) -> float``
    derives an entry's importance from its ``reflection`` (after redaction)
    once, at write time; the result is clamped to [0, 1], a non-finite one
    fails the write (:class:`InvalidEntryError`); it never runs at recall.
    ``lexical_weight`` weighs the lexical leg of recall's score (``similarity + lexical_weight * lexical``;
    0.75 by default, 0.25 up to revision 0017), a finite number from 0 to 10 (:class:`InvalidScoringError`).
    """
    scope = check_scope(Scope(tenant_id, resource_id, thread_id), thread_required=False)
    check_reserved_segment("resource_id", resource_id)
    check_reserved_segment("thread_id", thread_id)
    if embedder is None or not isinstance(getattr(embedder, "dimensions", None), int) or not hasattr(embedder, "embed"):
        raise ConfigurationError("embedder must have an int `dimensions` and an async `embed(texts)` method")
    if getattr(embedder, "embed_query", None) is not None and not callable(embedder.embed_query):
        raise ConfigurationError("embedder.embed_query must be an async method `embed_query(text)`")
    check_model(embedding_model(embedder))
    check_bool(require_consent, "require_consent")
    lexical_weight = check_lexical_weight(lexical_weight)
    if on_invalidate is not None and not callable(on_invalidate):
        raise ConfigurationError("on_invalidate must be callable")
    if importance_from is not None and not callable(importance_from):
        raise ConfigurationError("importance_from must be callable")
    limits = limits or MemoryLimits()
    validator = WorkingMemoryValidator(schema, validate_working_memory, limits.working_memory_bytes)
    vector_store, working_store = default_stores(vector_store, working_store)
    return Memory(
        MemoryConfig(
            scope=scope,
            embedder=embedder,
            vector_store=vector_store,
            working_store=working_store,
            validator=validator,
            template=working_memory_template,
            limits=limits,
            redaction=Redaction(secrets, redactor),
            require_consent=require_consent,
            on_invalidate=on_invalidate,
            clock=clock or utc_now,
            importance_from=importance_from,
            lexical_weight=lexical_weight,
        )
    )
