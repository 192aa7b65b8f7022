"""Embedders and the vector checks every backend applies.

An :class:`Embedder` turns texts into vectors: ``dimensions`` is the width and
``embed(texts)`` returns one ``list[float]`` of that length per text. Two members
are optional: ``embed_query(text)`` embeds a recall query differently from the
entries (:func:`embed_query`), and ``model_id`` names the model for the
embedding-model guard (:func:`embedding_model`). The core package ships
:func:`create_hash_embedder`, a deterministic feature-hashing embedder for tests
and demos only (production hosts supply a real embedder); :mod:`prism_memory.embedders` adapts real models
(sentence-transformers, OpenAI-compatible HTTP, LangChain), each behind an
optional extra.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from .errors import DimensionMismatchError, EmbeddingFailedError, InvalidEmbeddingError, LimitExceededError, PrismMemoryError
from .lexical import lexical_terms_v1
from .types import HARD_CAPS, EmbeddingModel

#: pgvector's widest vector.
MAX_DIMENSIONS = 16000
#: Bounds on an embedding's L2 norm (``assert_embedding_v1`` in SQL uses the same).
MIN_NORM = 1e-15
MAX_NORM = 1e15


@runtime_checkable
class Embedder(Protocol):
    """Host-owned embedding model: ``embed`` returns ``len(texts)`` vectors of ``dimensions`` floats.

    Optional members, used when present (an embedder with only these two keeps working unchanged):

    * ``async embed_query(text: str) -> list[float]``: the embedding of a recall query, for models that
      embed queries and documents differently (E5, BGE, Cohere's and Voyage's input types); ``recall``
      and everything that embeds a query use it (:func:`embed_query`), ``embed`` embeds entries.
    * ``model_id: str``: the model's identity (a non-blank string of at most 256 UTF-8 bytes), recorded
      per thread with ``dimensions`` by the embedding-model guard (:func:`embedding_model`). Without it
      (or with ``None``) only the width is checked, as before the guard.
    """

    dimensions: int

    async def embed(self, texts: list[str]) -> list[list[float]]: ...


def embedding_model(embedder: Embedder) -> EmbeddingModel | None:
    """The embedder's identity for the embedding-model guard: ``EmbeddingModel(model_id, dimensions)``,
    or ``None`` when it has no ``model_id`` (or ``model_id`` is ``None``). Not checked here: the stores
    and ``create_memory`` check it (:func:`prism_memory.checks.check_model`)."""
    model_id = getattr(embedder, "model_id", None)
    return None if model_id is None else EmbeddingModel(model_id, embedder.dimensions)


def embedding_values(vector: object, label: str = "embedding") -> np.ndarray:
    """One embedding as a 1-D float array for pgvector, checked for what cannot be sent.

    A 1-D numpy float array is returned as it is (not copied); anything else
    becomes a new ``float64`` array.

    Raises :class:`InvalidEmbeddingError` when ``vector`` is not a non-empty
    sequence (``list``, ``tuple``, 1-D numpy array) of real numbers (not
    ``bool``), contains NaN or ±Infinity, or is wider than 16,000 (pgvector's
    limit). Python-only: a non-number or a number too large for a float
    cannot be sent as ``float32``. The norm and width rules are
    :func:`assert_finite_vector`'s.
    """
    if isinstance(vector, np.ndarray) and vector.ndim == 1 and vector.dtype.kind == "f":
        values = vector  # checked as it is: no copy per entry written
    elif isinstance(vector, (list, tuple)) and all(type(value) is float for value in vector):
        values = np.asarray(vector, dtype=np.float64)  # the common case, without a Python loop per value
    else:
        values = np.asarray(_numbers(vector, label), dtype=np.float64)
    if not np.isfinite(values).all():
        position = int(np.flatnonzero(~np.isfinite(values))[0])
        raise InvalidEmbeddingError(f"{label}[{position}] is not finite: {float(values[position])!r}")
    if values.size == 0:
        raise InvalidEmbeddingError(f"{label} is empty")
    if values.size > MAX_DIMENSIONS:
        raise InvalidEmbeddingError(f"{label} has {values.size} dimensions; pgvector stores at most {MAX_DIMENSIONS}")
    return values


def _numbers(vector: object, label: str) -> list[float]:
    """The values of a sequence of real numbers as floats (too large ones as infinity), else :class:`InvalidEmbeddingError`."""
    one_dimensional_array = isinstance(vector, np.ndarray) and vector.ndim == 1
    if not one_dimensional_array and (isinstance(vector, (str, bytes, bytearray)) or not isinstance(vector, Sequence)):
        raise InvalidEmbeddingError(f"{label} must be a sequence of numbers, got {type(vector).__name__}")
    values: list[float] = []
    for position, value in enumerate(vector):  # type: ignore[arg-type]
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not _is_numpy_real(value):
            raise InvalidEmbeddingError(f"{label}[{position}] is not a number: {value!r}")
        try:
            values.append(float(value))
        except OverflowError:
            values.append(math.inf)
    return values


def assert_finite_vector(vector: object, label: str = "embedding", expected_length: int | None = None) -> list[float]:
    """Check one embedding and return it as ``list[float]``.

    Raises :class:`InvalidEmbeddingError` as :func:`embedding_values` does, and
    when its L2 norm is outside [1e-15, 1e15] after rounding to float32 (zero
    has no cosine; pgvector sums squares in float32, so larger norms overflow
    and smaller ones underflow); :class:`DimensionMismatchError` when
    ``expected_length`` is given and differs. Every embedding is a non-empty
    vector of finite numbers; ``assert_embedding_v1`` (PM003) applies the
    same bounds in SQL.
    """
    values = embedding_values(vector, label)
    if expected_length is not None and values.size != expected_length:
        raise DimensionMismatchError(f"{label} has {values.size} dimensions, expected {expected_length}")
    with np.errstate(over="ignore"):
        stored = values.astype(np.float32).astype(np.float64)  # what pgvector keeps
    norm = math.sqrt(float(np.dot(stored, stored))) if np.all(np.isfinite(stored)) else math.inf
    if not MIN_NORM <= norm <= MAX_NORM:
        raise InvalidEmbeddingError(
            f"{label} has an L2 norm of {norm:.3g}; it must be between {MIN_NORM:g} and {MAX_NORM:g} (not zero)"
        )
    return values.tolist()


def _is_numpy_real(value: object) -> bool:
    """A numpy scalar (not an array) of a real type."""
    return isinstance(value, np.generic) and value.dtype.kind in ("f", "i", "u")


async def embed_batched(
    embedder: Embedder, texts: Sequence[str], batch_size: int = 64, labels: Sequence[str] | None = None
) -> list[list[float]]:
    """Embed ``texts`` in calls of at most ``batch_size`` texts (hard cap 128).

    Returns one checked ``list[float]`` of ``embedder.dimensions`` per text, in order.
    ``labels`` names each text's vector in error messages (the facade passes
    ``entry 2 (b): embedding`` or ``the query embedding``); by default text
    ``i`` is ``text i: embedding``, counted from 1.
    Raises :class:`EmbeddingFailedError` when the embedder itself raises,
    :class:`LimitExceededError` for a batch size outside 1..128,
    :class:`InvalidEmbeddingError` / :class:`DimensionMismatchError` for a bad
    vector, and :class:`InvalidEmbeddingError` when the embedder returns the
    wrong number of vectors.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= HARD_CAPS["embed_batch"]:
        raise LimitExceededError(f"batch_size must be between 1 and {HARD_CAPS['embed_batch']}, got {batch_size!r}")
    vectors: list[list[float]] = []
    for start in range(0, len(texts), batch_size):
        batch = list(texts[start : start + batch_size])
        produced = await _embedder_call(embedder.embed(batch), f"a batch of {len(batch)} texts")
        if not isinstance(produced, (list, tuple)):
            raise InvalidEmbeddingError(f"embedder returned {type(produced).__name__}, not a list of vectors")
        if len(produced) != len(batch):
            raise InvalidEmbeddingError(f"embedder returned {len(produced)} vectors for {len(batch)} texts")
        for offset, vector in enumerate(produced):
            index = start + offset
            label = f"text {index + 1}: embedding" if labels is None else labels[index]
            vectors.append(assert_finite_vector(vector, label, embedder.dimensions))
    return vectors


async def embed_query(embedder: Embedder, text: str, label: str = "the query embedding") -> list[float]:
    """The checked embedding (``list[float]`` of ``embedder.dimensions``) of one recall query.

    ``embedder.embed_query(text)`` when the embedder has it, else ``embed([text])``
    (:func:`embed_batched`). Raises :class:`EmbeddingFailedError` when the embedder raises
    something other than a :class:`PrismMemoryError` (the original as ``__cause__``),
    :class:`InvalidEmbeddingError` / :class:`DimensionMismatchError` for a bad vector.
    """
    query = getattr(embedder, "embed_query", None)
    if query is None:
        [vector] = await embed_batched(embedder, [text], 1, [label])
        return vector
    return assert_finite_vector(await _embedder_call(query(text), "the query"), label, embedder.dimensions)


async def _embedder_call(call, what: str):
    """Await an embedder's coroutine; its exceptions (but a :class:`PrismMemoryError`) become :class:`EmbeddingFailedError`."""
    try:
        return await call
    except PrismMemoryError:
        raise
    except Exception as exc:
        raise EmbeddingFailedError(f"the embedder failed on {what}: {exc!r}") from exc


#: The version of :class:`HashEmbedder`'s feature rule (terms, trigrams, weights, hashing), part of its
#: ``model_id``: a change of the rule is a new model, which the embedding-model guard keeps apart.
HASH_FEATURE_RULE = 1


class HashEmbedder:
    """Deterministic feature-hashing embedder (tests and demos only).

    Features of a text are its v1 lexical terms (:func:`prism_memory.lexical.lexical_terms_v1`,
    weight 3; not the v2 terms ``text_tsv`` holds since revision 0010, so vectors stored before it
    still match new queries' vectors) and the character trigrams of each term padded with ``#``
    (weight 1). Each feature adds its weight, with a sign, to one of
    ``dimensions`` buckets chosen by BLAKE2b. The vector is left unnormalised:
    its components are small integers, so float32 sums in pgvector are exact and
    the emulator reproduces Postgres's cosine similarity bit for bit.

    Its ``model_id`` is ``"prism-memory/hash-v<rule>-d<dimensions>"`` (:data:`HASH_FEATURE_RULE`): the
    feature rule's version and the width, since buckets of another width are another vector space.
    """

    def __init__(self, dimensions: int = 256) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 2 <= dimensions <= 16000:
            raise LimitExceededError(f"dimensions must be an integer between 2 and 16000, got {dimensions!r}")
        self.dimensions = dimensions
        self.model_id = f"prism-memory/hash-v{HASH_FEATURE_RULE}-d{dimensions}"
        self._cache: dict[str, tuple[int, int]] = {}

    def _bucket(self, feature: str) -> tuple[int, int]:
        cached = self._cache.get(feature)
        if cached is None:
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            number = int.from_bytes(digest, "little")
            cached = (number % self.dimensions, 1 if (number >> 63) & 1 else -1)
            if len(self._cache) < 200_000:
                self._cache[feature] = cached
        return cached

    def embed_one(self, text: str) -> list[float]:
        """Embed one text into a ``list[float]`` of length ``dimensions`` (never the zero vector)."""
        vector = [0] * self.dimensions
        terms = lexical_terms_v1(text) or [text.strip() or text]
        for term in terms:
            index, sign = self._bucket("w:" + term)
            vector[index] += 3 * sign
            padded = f"#{term}#"
            for start in range(len(padded) - 2):
                index, sign = self._bucket("c:" + padded[start : start + 3])
                vector[index] += sign
        if not any(vector):
            vector[self._bucket("w:" + text)[0]] = 1
        return [float(value) for value in vector]

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Embed ``texts``: one ``list[float]`` of length ``dimensions`` per text."""
        return [self.embed_one(text) for text in texts]


def create_hash_embedder(dimensions: int = 256) -> HashEmbedder:
    """Create a :class:`HashEmbedder` of ``dimensions`` (2..16000, default 256) for tests and demos."""
    return HashEmbedder(dimensions)
