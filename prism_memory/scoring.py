"""Recall scores, defined once (docs/api.md, "Recall score" and "Composite scoring and explain").

Default: ``score = similarity + lexical_weight * lexical`` where ``similarity``
is ``1 - cosine distance`` (pgvector ``<=>``) in [-1, 1] and ``lexical`` is the
share of the query's distinct lexical terms present in the entry, in [0, 1];
``lexical_weight`` is a memory's (``create_memory``) or a call's, :data:`LEXICAL_WEIGHT` by default.

Composite (opt-in): the top ``top_k *
CANDIDATE_FACTOR`` candidates by the default score are re-ranked by
``w_similarity * default + w_recency * recency + w_importance * importance``.
``recall_v4`` and ``scoring_weights_v1`` compute the same in
SQL with the same constants and the same float operations; the emulator uses
this module.
"""

from __future__ import annotations

import math
from datetime import datetime

from .checks import real_number
from .errors import InvalidScoringError
from .types import RecallScoringOptions

#: The lexical leg's weight in the default score unless a memory or a call gives one (``recall_v4``'s default);
#: 0.25 up to revision 0017 (docs/benchmarks.md, "The lexical weight").
LEXICAL_WEIGHT = 0.75
#: The lexical weight's range, as ``recall_v4`` checks it (PM015).
MAX_LEXICAL_WEIGHT = 10.0
#: Candidates fetched per hit before a composite re-rank.
CANDIDATE_FACTOR = 4
#: An entry without importance scores this (neutral).
NEUTRAL_IMPORTANCE = 1.0


def check_lexical_weight(weight: object) -> float:
    """The lexical leg's weight as a ``float``: a real number (not a ``bool``), finite and within
    [0, :data:`MAX_LEXICAL_WEIGHT`], else :class:`InvalidScoringError` (``recall_v4``: PM015)."""
    number = real_number(weight, "lexical_weight", InvalidScoringError)
    if number is None or not 0 <= number <= MAX_LEXICAL_WEIGHT:
        # the float, not the value given: repr of an int of thousands of digits raises
        raise InvalidScoringError(f"lexical_weight must be a finite number within [0, 10], got {number!r}")
    return number


def scoring_weights(options: RecallScoringOptions) -> tuple[float, float, float]:
    """``(similarity, recency, importance)`` weights, as ``scoring_weights_v1``: similarity keeps what
    remains of 1; weights summing over 1 are scaled down to sum 1 (similarity 0). ``options`` is checked."""
    recency = 0.0 if options.recency_weight is None else float(options.recency_weight)
    importance = 0.0 if options.importance_weight is None else float(options.importance_weight)
    total = recency + importance
    if total > 1:
        return 0.0, recency / total, importance / total
    return 1.0 - total, recency, importance


def recency(now: datetime, created_at: datetime, half_life_ms: float) -> float:
    """Mirror of ``recency_v1``: ``0.5 ** (max(0, now - created_at in ms) / half_life_ms)``, the age exact to
    the microsecond; 0 past 1074 half-lives, where the power underflows."""
    age = now - created_at
    age_ms = ((age.days * 86_400 + age.seconds) * 1_000_000 + age.microseconds) / 1000
    age_ms = max(0.0, age_ms)
    return 0.0 if age_ms / 1074 > half_life_ms else math.pow(0.5, age_ms / half_life_ms)


def importance_used(stored: float | None) -> float:
    """The importance a composite score uses: the stored one clamped to [0, 1], else neutral 1.0."""
    return NEUTRAL_IMPORTANCE if stored is None else min(1.0, max(0.0, stored))
