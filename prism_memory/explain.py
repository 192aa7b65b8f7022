"""``recall(..., explain=True)``: the explanation both backends build from their hits and gate counts."""

from __future__ import annotations

from .types import HitExplanation, RecallExplanation, RecallHit

#: The recall gates, in the order an entry is attributed to the first one it fails.
GATES = ("scope", "hold", "consent", "invalidation", "expiry", "selection")


def explain_hits(
    hits: list[RecallHit], weights: dict[str, float] | None, removed: dict[str, int]
) -> RecallExplanation:
    """Per-hit components with the normalised weights (``{"similarity", "recency", "importance"}``, ``None``
    without composite scoring; each backend gives its own: ``recall_v4``'s gate rows, the emulator's
    :func:`prism_memory.scoring.scoring_weights`), and removals per gate."""
    return RecallExplanation(
        [HitExplanation(id=hit.id, similarity=hit.similarity, lexical=hit.lexical, recency=hit.recency,
                        importance=hit.importance, score=hit.score, weights=None if weights is None else dict(weights))
         for hit in hits],
        {gate: int(removed.get(gate, 0)) for gate in GATES},
    )
