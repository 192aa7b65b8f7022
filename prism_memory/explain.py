"""``recall(..., explain=True)``: the explanation both backends build from their hits and gate counts."""

from __future__ import annotations

from .scoring import scoring_weights
from .types import HitExplanation, RecallExplanation, RecallHit, RecallScoringOptions

#: The recall gates, in the order an entry is attributed to the first one it fails.
GATES = ("scope", "hold", "consent", "invalidation", "expiry")


def explain_hits(
    hits: list[RecallHit], scoring: RecallScoringOptions | None, removed: dict[str, int]
) -> RecallExplanation:
    """Per-hit components with the normalised weights (``None`` without scoring), and removals per gate."""
    weights = None
    if scoring is not None:
        similarity, recency, importance = scoring_weights(scoring)
        weights = {"similarity": similarity, "recency": recency, "importance": importance}
    return RecallExplanation(
        [HitExplanation(id=hit.id, similarity=hit.similarity, lexical=hit.lexical, recency=hit.recency,
                        importance=hit.importance, score=hit.score, weights=None if weights is None else dict(weights))
         for hit in hits],
        {gate: int(removed.get(gate, 0)) for gate in GATES},
    )
