"""The emulator's recall: ``recall_v4`` in Python, one method for each of its steps.

* similarity follows pgvector's cosine: ``dot / sqrt(|a|^2 * |b|^2)`` clamped
  to [-1, 1], then ``1 - (1 - s)``, over the float32 values pgvector stores.
  pgvector sums the products in float32, the emulator in float64: the two are
  bit-identical whenever the products are exact in float32 (the hash
  embedder's small integers), and otherwise agree to about 1e-7, so entries
  whose scores differ by less than that may swap places;
* lexical uses :func:`prism_memory.lexical.lexical_terms` for entries and
  :func:`prism_memory.lexical.query_terms` for queries, the mirrors of
  ``lexical_terms_v2`` and ``query_terms_v2``, and the query's date terms
  against the entry's event date (:mod:`prism_memory.lexical_dates`, the mirror
  of ``query_date_terms_v1`` and ``lexical_score_v2``);
* ties break on sequence, then id in code-point order (``collate "C"``), then thread and resource.

The steps of :meth:`RecallOperations.recall`, beside ``recall_v4.sql``:

====================================  ============================================================================
step                                  recall_v4
====================================  ============================================================================
``_recall_arguments``                 ``scoring_weights_v1`` in its declare, then ``assert_now_v1``,
                                      ``assert_scope_v2``, top_k, message_range, the query's size and
                                      blankness, ``assert_embedding_v1``, ``assert_dimensions_v2``
``_live_grants`` (sharing group)      the ``grants`` CTE: live grants from the parent thread to this one
``_check_model``                      ``if p_model_id is not null``: PM018 for the thread and the grants' parents
``_foreign_threads``                  ... and ``v_foreign``, the threads left out of the across-threads leg
``_Reach``                            the gates: the scope gate (the thread; with ``p_across_threads`` the
                                      resource's other threads, travelling entries of the query's width
                                      outside ``v_foreign``; the granted ids); ``_admitted`` adds consent and
                                      hold (``is_injectable_v1``), tombstones, expiry (``is_live_v2``) and
                                      the selection (``selects_v1``)
``_recall_candidates``                the three legs (the thread: ``recall_bounds_v2``, ``recall_rescore_v2``
                                      less its tombstones; the other threads: ``recall_top_v2``; the grants),
                                      scored ``similarity + p_lexical_weight * lexical``, and the ``candidates`` CTE's
                                      best ``v_keep`` (top_k, or top_k x 4 with scoring)
``_rerank``                           the ``blended`` and ``hits`` CTEs: the composite re-rank, cut to top_k
``_adjacent``                         the ``adjacent`` CTE
``_gate_counts``                      the ``gates`` CTE (``p_explain``)
``_hit``                              the ``picked`` rows of kind 'hit' and the final join
====================================  ============================================================================

Postgres ranks each leg's best exactly (or, over 5,000 travelling entries, through HNSW, re-ranked
exactly) before it unions them; the emulator ranks every admitted entry exactly in one pass, which
gives the same best ``v_keep``.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import numpy as np

from ..checks import check_bool, check_model, check_now, check_scope_id, check_scoring, check_text, scope_texts
from ..embedding import embedding_values
from ..errors import EmbeddingModelMismatchError, InvalidQueryError, PayloadTooLargeError
from ..explain import explain_hits
from ..lexical import query_terms
from ..lexical_dates import held_terms, query_date_terms
from ..scoring import CANDIDATE_FACTOR, LEXICAL_WEIGHT, check_lexical_weight, importance_used, recency, scoring_weights
from ..selection import check_selection, selects
from ..types import (
    HARD_CAPS,
    TRAVELLING_SCOPES,
    AdjacentEntry,
    EmbeddingModel,
    RecallHit,
    RecallResult,
    RecallScoringOptions,
    RecallSelection,
    Scope,
    check_int_option,
)
from .state import EmulatorState, EntryRow, ThreadKey
from .vectors import float32, norm_squared
from .vectors import similarity as cosine_similarity


@dataclass(frozen=True, slots=True)
class _Reach:
    """Where one recall reads and whom it asks for: recall_v4's scope gate and the arguments of its other gates."""

    key: ThreadKey  # the thread recalled
    others: tuple[ThreadKey, ...]  # the resource's other threads, with across_threads (else none)
    granted: dict[ThreadKey, frozenset[str]]  # parent thread -> the ids its live grants name
    foreign: frozenset[ThreadKey]  # threads another embedding model of the query's width wrote
    width: int  # the query embedding's
    across_threads: bool
    require_consent: bool
    now: datetime
    selection: RecallSelection | None  # checked; None: nothing selected

    def threads(self) -> list[ThreadKey]:
        """The thread, the resource's other threads, then the grants' parent threads, each once."""
        return list(dict.fromkeys([self.key, *self.others, *self.granted]))

    def in_scope(self, where: ThreadKey, row: EntryRow) -> bool:
        """The scope gate: any entry of the thread; of another thread, one of the query's width that travels
        (across threads: same resource, consent scope in :data:`TRAVELLING_SCOPES`, no foreign model) or is
        granted."""
        if where == self.key:
            return True
        travels = (self.across_threads and where[:2] == self.key[:2] and row.consent_scope in TRAVELLING_SCOPES
                   and where not in self.foreign)
        return (travels or row.id in self.granted.get(where, ())) and row.embedding.shape[0] == self.width


class _Candidate(NamedTuple):
    """An admitted entry with its exact scores (``recall_candidate_v1``); ``base = similarity + lexical_weight * lexical``."""

    where: ThreadKey
    row: EntryRow
    similarity: float
    lexical: float
    base: float


class _Ranked(NamedTuple):
    """A hit: its candidate, the recency and importance it was scored with, and its final score."""

    candidate: _Candidate
    recency: float | None
    importance: float | None
    score: float


def _rank_key(score: float, where: ThreadKey, row: EntryRow) -> tuple[float, int, str, str, str]:
    """recall_v4's order: score desc, sequence, id, thread, resource (code-point order)."""
    return (-score, row.sequence, row.id, where[2], where[1])


class RecallOperations(EmulatorState):
    """``recall`` of :class:`prism_memory.stores.VectorStore`; the grants come from the sharing group
    (``_live_grants``)."""

    async def recall(
        self,
        scope: Scope,
        query_embedding: Sequence[float],
        query_text: str,
        top_k: int,
        message_range: int,
        require_consent: bool = False,
        share_from_parent_thread_id: str | None = None,
        now: datetime | None = None,
        scoring: RecallScoringOptions | None = None,
        explain: bool = False,
        across_threads: bool = False,
        model: EmbeddingModel | None = None,
        selection: RecallSelection | None = None,
        lexical_weight: float = LEXICAL_WEIGHT,
    ) -> RecallResult:
        """Mirror of ``recall_v4``: own thread, the travelling entries of the resource's other threads
        (``across_threads``; with a ``model``, not those of threads that recorded another model of its width)
        and live grants, the consent and expiry gates and ``selection``, an exact scored scan, the optional composite re-rank of
        the top ``top_k * 4``, adjacency within each hit's thread, and gate counts. With a ``model``, the
        thread and the parent thread of a live grant must not hold another model's entries
        (:class:`EmbeddingModelMismatchError`). The steps and their errors: see this module."""
        key, query, scoring, now, selection, lexical_weight = self._recall_arguments(
            scope, query_embedding, query_text, top_k, message_range, share_from_parent_thread_id, scoring, explain,
            across_threads, now, model, selection, lexical_weight,
        )
        granted = {} if share_from_parent_thread_id is None else self._live_grants(key, share_from_parent_thread_id, now)
        if model is not None:
            self._check_model(key, model, granted)
        reach = _Reach(key, self._other_threads(key) if across_threads else (), granted, self._foreign_threads(model),
                       query.shape[0], across_threads, require_consent, now, selection)
        keep = top_k if scoring is None else top_k * CANDIDATE_FACTOR
        top = _rerank(self._recall_candidates(reach, query, query_text, keep, lexical_weight), scoring, top_k, now)
        hits = [_hit(ranked) for ranked in top]
        adjacent = self._adjacent(reach, top, message_range)
        explanation = explain_hits(hits, _weights(scoring), self._gate_counts(reach)) if explain else None
        return RecallResult(hits, adjacent, explanation)

    def _recall_arguments(
        self, scope: Scope, query_embedding: Sequence[float], query_text: str, top_k: int, message_range: int,
        share_from_parent_thread_id: str | None, scoring: RecallScoringOptions | None, explain: bool,
        across_threads: bool, now: datetime | None, model: EmbeddingModel | None, selection: object,
        lexical_weight: object,
    ) -> tuple[ThreadKey, np.ndarray, RecallScoringOptions | None, datetime, RecallSelection | None, float]:
        """Python's type checks, then recall_v4's checks in its order; returns the thread's key, the query as
        float32, the checked scoring options, the clock, the checked selection and lexical weight. :class:`LimitExceededError` for top_k outside
        1..32 or message_range outside 0..4, :class:`PayloadTooLargeError` for a query over 64 KiB,
        :class:`InvalidQueryError` for a blank one, the embedding's and scope's errors otherwise."""
        scope_texts(scope)
        values = embedding_values(query_embedding, "the query embedding")
        check_text(query_text, "the query text", InvalidQueryError)
        if share_from_parent_thread_id is not None:  # before the scoring options, as the Postgres store checks it
            check_scope_id("share_from_parent_thread_id", share_from_parent_thread_id)
        scoring = check_scoring(scoring)  # scoring_weights_v1 runs first, in recall_v4's declare
        selection = check_selection(selection)  # recall_selection_v1, last in its declare
        check_bool(explain, "explain")
        check_bool(across_threads, "across_threads")
        now = check_now(now)
        check_model(model, [len(values)])
        key = self._key(scope)
        check_int_option("top_k", top_k, 1, HARD_CAPS["top_k"])
        check_int_option("message_range", message_range, 0, HARD_CAPS["message_range"])
        if len(query_text.encode("utf-8")) > HARD_CAPS["query_bytes"]:
            raise PayloadTooLargeError("the query text is over the 64 KiB hard cap")
        if not query_text.strip():  # recall_v4: PM008
            raise InvalidQueryError("the query text must not be blank")
        lexical_weight = check_lexical_weight(lexical_weight)
        query = float32(values, "the query embedding")
        self._check_dimensions(self._threads.get(key, {}), query.shape[0])
        return key, query, scoring, now, selection, lexical_weight

    def _check_model(self, key: ThreadKey, model: EmbeddingModel, granted: dict[ThreadKey, frozenset[str]]) -> None:
        """Mirror of ``recall_v4``'s model check (``p_model_id``): another model of the same width recorded by the
        thread (holding entries) or by the parent thread of a live grant to it (holding a granted entry; parents
        in code-point order) raises :class:`EmbeddingModelMismatchError`."""

        def other_model(where: ThreadKey) -> str | None:
            recorded = self._models.get(where)
            if recorded is None or recorded[1] != model.dimensions or recorded[0] == model.model_id:
                return None
            return recorded[0]

        recorded = other_model(key)
        if recorded is not None and self._threads.get(key):
            raise EmbeddingModelMismatchError(
                f"thread {key[2]!r} holds entries embedded with model {recorded!r} ({model.dimensions} dimensions), "
                f"not {model.model_id!r}: recall with that model, or rebuild_index the thread with this one"
            )
        for where, ids in granted.items():
            recorded = other_model(where)
            if recorded is not None and ids & self._threads.get(where, {}).keys():
                raise EmbeddingModelMismatchError(
                    f"the parent thread {where[2]!r} (resource {where[1]!r}) holds entries embedded with model "
                    f"{recorded!r} ({model.dimensions} dimensions), not {model.model_id!r}"
                )

    def _foreign_threads(self, model: EmbeddingModel | None) -> frozenset[ThreadKey]:
        """recall_v4's ``v_foreign``: the threads whose recorded model is another of ``model``'s width (none
        without a model)."""
        if model is None:
            return frozenset()
        return frozenset(where for where, (model_id, width) in self._models.items()
                         if width == model.dimensions and model_id != model.model_id)

    def _other_threads(self, key: ThreadKey) -> tuple[ThreadKey, ...]:
        """The resource's other threads (exact ids: never another resource, a derived one included)."""
        return tuple(where for where in self._threads if where[:2] == key[:2] and where != key)

    def _admitted(self, reach: _Reach, where: ThreadKey, row: EntryRow) -> bool:
        """Every gate: in scope, injectable and not tombstoned (``_visible``), live (``_live``), selected."""
        return (reach.in_scope(where, row) and self._visible(where, row, reach.require_consent)
                and self._live(where, row, reach.now)
                and selects(reach.selection, row.metadata, row.occurred_at, row.created_at))

    def _recall_candidates(self, reach: _Reach, query: np.ndarray, query_text: str, keep: int,
                           lexical_weight: float) -> list[_Candidate]:
        """Every admitted entry of the threads ``reach`` reads, scored exactly (similarity + lexical_weight * lexical, lexical
        the share of the query's terms the entry holds in its text or its event date), in recall_v4's order: the best
        ``keep``."""
        terms = set(query_terms(query_text))
        dates = query_date_terms(sorted(terms))
        query_norm_squared = norm_squared(query)
        query_double = query.astype(np.float64)
        scored = []
        for where in reach.threads():
            for row in self._threads.get(where, {}).values():
                if not self._admitted(reach, where, row):
                    continue
                similarity = cosine_similarity(row.embedding, row.norm_squared, query_double, query_norm_squared)
                event_at = row.created_at if row.occurred_at is None else row.occurred_at
                lexical = len(terms & held_terms(row.terms, event_at, dates)) / len(terms) if terms else 0.0
                scored.append(_Candidate(where, row, similarity, lexical, similarity + lexical_weight * lexical))
        scored.sort(key=lambda candidate: _rank_key(candidate.base, candidate.where, candidate.row))
        return scored[:keep]

    def _adjacent(self, reach: _Reach, top: list[_Ranked], message_range: int) -> list[AdjacentEntry]:
        """The admitted entries within ``message_range`` sequences of a hit in the hit's own thread, hits left out,
        ordered by sequence, id, thread, resource."""
        if not (message_range > 0 and top):
            return []
        hit_keys = {(ranked.candidate.where, ranked.candidate.row.id) for ranked in top}
        near: dict[tuple[ThreadKey, str], tuple[ThreadKey, EntryRow]] = {}
        for ranked in top:
            where, hit = ranked.candidate.where, ranked.candidate.row
            for other in self._threads.get(where, {}).values():
                if (abs(other.sequence - hit.sequence) <= message_range and (where, other.id) not in hit_keys
                        and self._admitted(reach, where, other)):
                    near[(where, other.id)] = (where, other)
        ordered = sorted(near.values(), key=lambda item: (item[1].sequence, item[1].id, item[0][2], item[0][1]))
        return [
            AdjacentEntry(id=row.id, text=row.text, metadata=copy.deepcopy(row.metadata), sequence=row.sequence,
                          importance=row.importance, thread_id=where[2], resource_id=where[1])
            for where, row in ordered
        ]

    def _gate_counts(self, reach: _Reach) -> dict[str, int]:
        """Per gate, how many entries it removed, each counted at the first it fails: the thread's entries, the
        other threads' (across threads) and the granted ones."""
        counted = {(where, row.id): (where, row) for where in [reach.key, *reach.others]
                   for row in self._threads.get(where, {}).values()}
        counted.update({(where, row.id): (where, row) for where, ids in reach.granted.items()
                        for row in self._threads.get(where, {}).values() if row.id in ids})
        removed: dict[str, int] = {}
        for where, row in counted.values():
            gate = self._first_gate(reach, where, row)
            if gate is not None:
                removed[gate] = removed.get(gate, 0) + 1
        return removed

    def _first_gate(self, reach: _Reach, where: ThreadKey, row: EntryRow) -> str | None:
        """The first gate the entry fails, in the order scope, hold, consent, invalidation, expiry, selection
        (``None``: none)."""
        if not reach.in_scope(where, row):
            return "scope"
        if row.legal_hold:
            return "hold"
        if not row.consented(reach.require_consent):
            return "consent"
        if row.id in self._tombstones.get(where, {}):
            return "invalidation"
        if not self._live(where, row, reach.now):
            return "expiry"
        if not selects(reach.selection, row.metadata, row.occurred_at, row.created_at):
            return "selection"
        return None


def _rerank(
    candidates: list[_Candidate], scoring: RecallScoringOptions | None, top_k: int, now: datetime
) -> list[_Ranked]:
    """The hits: without ``scoring``, the first ``top_k`` candidates at their base score (importance as stored);
    with it, every candidate re-ranked by the composite score (:mod:`prism_memory.scoring`), cut to ``top_k``."""
    if scoring is None:
        return [_Ranked(candidate, None, candidate.row.importance, candidate.base) for candidate in candidates[:top_k]]
    w_similarity, w_recency, w_importance = scoring_weights(scoring)
    blended = []
    for candidate in candidates:
        fresh = None if scoring.half_life_ms is None else recency(now, candidate.row.created_at, scoring.half_life_ms)
        weight = importance_used(candidate.row.importance)
        score = w_similarity * candidate.base + w_recency * (fresh or 0.0) + w_importance * weight
        blended.append(_Ranked(candidate, fresh, weight, score))
    blended.sort(key=lambda ranked: _rank_key(ranked.score, ranked.candidate.where, ranked.candidate.row))
    return blended[:top_k]


def _hit(ranked: _Ranked) -> RecallHit:
    """A hit as returned: the entry's columns (metadata deep-copied), its scores, its thread and resource."""
    candidate, row = ranked.candidate, ranked.candidate.row
    return RecallHit(id=row.id, text=row.text, metadata=copy.deepcopy(row.metadata), sequence=row.sequence,
                     score=ranked.score, similarity=candidate.similarity, lexical=candidate.lexical,
                     importance=ranked.importance, thread_id=candidate.where[2], resource_id=candidate.where[1],
                     recency=ranked.recency, created_at=row.created_at, updated_at=row.updated_at)


def _weights(scoring: RecallScoringOptions | None) -> dict[str, float] | None:
    """The normalised weights an explanation shows (``scoring_weights_v1``'s, as ``recall_v4``'s gate rows carry them)."""
    if scoring is None:
        return None
    similarity, recency, importance = scoring_weights(scoring)
    return {"similarity": similarity, "recency": recency, "importance": importance}
