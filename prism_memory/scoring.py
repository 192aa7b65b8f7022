"""The default recall score, defined once (README, "Recall score").

``score = similarity + LEXICAL_WEIGHT * lexical`` where ``similarity`` is
``1 - cosine distance`` (pgvector ``<=>``) in [-1, 1] and ``lexical`` is the
share of the query's distinct lexical terms present in the entry, in [0, 1].
``recall_v1`` computes it in SQL with the same constant; the emulator uses
this one.
"""

#: Weight of the lexical leg in the default score (frozen with ``recall_v1``).
LEXICAL_WEIGHT = 0.25
