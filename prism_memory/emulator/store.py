"""The emulator's vector store: the operation groups composed into one class.

Each group is a module of its own, beside the SQL functions it mirrors:
:mod:`.writes`, :mod:`.recall`, :mod:`.lifecycle`, :mod:`.sharing`,
:mod:`.resource` and :mod:`.reads`, over the tables and shared rules of
:mod:`.state`; the RAG contract is :mod:`.rag`, the input rules :mod:`.rules`.
Metadata is stored as its JSON, like ``jsonb``.
"""

from __future__ import annotations

from .lifecycle import LifecycleOperations
from .rag import EmulatorRagStore
from .reads import ReadOperations
from .recall import RecallOperations
from .resource import ResourceOperations
from .sharing import SharingOperations
from .writes import WriteOperations


class EmulatorVectorStore(
    WriteOperations,
    RecallOperations,
    LifecycleOperations,
    SharingOperations,
    ResourceOperations,
    ReadOperations,
    EmulatorRagStore,
):
    """In-memory :class:`prism_memory.stores.VectorStore` and :class:`prism_memory.stores.RagVectorStore`.

    ``dimensions`` pins the embedding width like ``vector(N)`` (1..16,000,
    else :class:`~prism_memory.errors.LimitExceededError`); unpinned, the
    first entry of a thread (or chunk of a RAG scope) fixes its width. Data
    lives in this object only. Each method first checks its arguments' types
    as the Postgres store does (:mod:`prism_memory.checks`), then mirrors the
    SQL function named in its docstring (its input rules: :mod:`.rules`).
    """

    def __init__(self, dimensions: int | None = None) -> None:
        super().__init__(dimensions)
        self._init_rag()

    async def close(self) -> None:
        """Nothing to release; kept for the store contract."""


def create_memory_vector_store(dimensions: int | None = None) -> EmulatorVectorStore:
    """Create the in-memory vector store: the default when ``create_memory`` gets none, and the emulator's
    RAG store. ``dimensions`` pins every embedding's width (1..16,000)."""
    return EmulatorVectorStore(dimensions)
