"""A bridge from any LangChain ``Embeddings`` (extra ``langchain``): every LangChain provider, unchanged.

LangChain's ``Embeddings`` interface has ``embed_documents`` / ``embed_query`` and their async twins
``aembed_documents`` / ``aembed_query``; the bridge awaits the async ones and, for an object that has
only the sync methods, runs those in a worker thread.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import ConfigurationError

#: Attributes LangChain's classes name their model with, in the order the bridge looks for one.
MODEL_ATTRIBUTES = ("model", "model_name", "model_id")


class LangChainEmbedder:
    """An :class:`~prism_memory.embedding.Embedder` over a LangChain ``Embeddings``.

    ``embeddings``: the LangChain object (``langchain_core.embeddings.Embeddings`` or anything with
    ``embed_documents`` and ``embed_query``). ``dimensions``: the width of its vectors; by default its
    ``dimensions`` attribute when that is an int (``OpenAIEmbeddings(dimensions=...)``), else required.
    ``model_id``: what the embedding-model guard records; by default the object's ``model``,
    ``model_name`` or ``model_id`` attribute (``OpenAIEmbeddings(model="text-embedding-3-small")`` records
    ``"text-embedding-3-small"``, as :class:`~prism_memory.embedders.openai.OpenAIEmbedder` does for the same
    model), else ``None``: then only the width is checked. Entries go through ``aembed_documents`` and
    queries through ``aembed_query``; the object's errors surface as
    :class:`~prism_memory.errors.EmbeddingFailedError` through the memory. Raises
    :class:`ConfigurationError` for an object without those methods or without a known width.
    """

    def __init__(self, embeddings: Any, *, dimensions: int | None = None, model_id: str | None = None) -> None:
        if not all(callable(getattr(embeddings, name, None)) for name in ("embed_documents", "embed_query")):
            raise ConfigurationError("embeddings must be a LangChain Embeddings (embed_documents and embed_query)")
        if dimensions is None:
            dimensions = getattr(embeddings, "dimensions", None)
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 1 <= dimensions <= 16000:
            raise ConfigurationError(f"pass dimensions= (1..16000), the width of the vectors {type(embeddings).__name__} makes")
        if model_id is None:
            model_id = next((value for name in MODEL_ATTRIBUTES
                             if isinstance(value := getattr(embeddings, name, None), str) and value.strip()), None)
        self.embeddings = embeddings
        self.dimensions = dimensions
        self.model_id = model_id

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """Entries' embeddings: ``aembed_documents(texts)``, or ``embed_documents`` in a worker thread."""
        embed = getattr(self.embeddings, "aembed_documents", None)
        if embed is None:
            return await asyncio.to_thread(self.embeddings.embed_documents, texts)
        return await embed(texts)

    async def embed_query(self, text: str) -> list[float]:
        """A recall query's embedding: ``aembed_query(text)``, or ``embed_query`` in a worker thread."""
        embed = getattr(self.embeddings, "aembed_query", None)
        if embed is None:
            return await asyncio.to_thread(self.embeddings.embed_query, text)
        return await embed(text)
