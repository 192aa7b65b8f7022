"""Vector arithmetic as pgvector does it, shared by the emulator's stores."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..embedding import assert_finite_vector


def float32(values: Sequence[float], label: str, expected_length: int | None = None) -> np.ndarray:
    """The embedding as pgvector stores it (float32), after the same checks as ``assert_embedding_v1``."""
    return np.asarray(assert_finite_vector(values, label, expected_length), dtype=np.float32)


def norm_squared(vector: np.ndarray) -> float:
    """Sum of squares in float64 (cached per stored vector)."""
    as_double = vector.astype(np.float64)
    return float(np.dot(as_double, as_double))


def similarity(vector: np.ndarray, vector_norm_squared: float, query_double: np.ndarray, query_norm_squared: float) -> float:
    """``1 - (embedding <=> query)``: pgvector's cosine, clamped to [-1, 1], then subtracted twice as SQL does."""
    dot = float(np.dot(vector.astype(np.float64), query_double))
    cosine = dot / math.sqrt(vector_norm_squared * query_norm_squared)
    cosine = 1.0 if cosine > 1 else -1.0 if cosine < -1 else cosine
    return 1.0 - (1.0 - cosine)
