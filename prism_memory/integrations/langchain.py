"""LangChain's ``VectorStore`` over the RAG store, and its ``BaseRetriever`` over :meth:`Memory.recall` (extra ``langchain``).

:class:`PrismVectorStore` maps LangChain documents onto RAG chunks of one tenant's knowledge base
(``scope``): a document is one chunk whose ``id`` is the document's id and whose source is that id too,
so document ACL is granted per document id (``set_source_access(tenant_id, document_id, ...)``).
Every read names its reader: ``authorization=`` per call, else the store's ``reader``; with neither,
the read is refused (:class:`InvalidAuthorizationError`) instead of reading every source. Pass
:data:`UNRESTRICTED` to read without document ACL on purpose (a trusted service's read).

:class:`PrismRetriever` turns a memory's recall hits into ``Document`` objects (docs/integrations.md,
"LangChain").
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Final

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict

from ..errors import ConfigurationError, InvalidAuthorizationError, InvalidEntryError, InvalidQueryError
from ..memory import Memory
from ..rag_arguments import reader_argument, scope_arguments
from ..stores import RagVectorStore
from ..types import RagAccessConstraint, RagChunk, RagMatch, RecallHit
from .loop_bridge import EventLoopThread, LoopBridge

__all__ = ["RECALL_KEY", "RECALL_OPTIONS", "UNRESTRICTED", "UPSERT_BATCH", "EventLoopThread", "PrismRetriever", "PrismVectorStore",
           "Reader", "Unrestricted"]

#: Chunks per ``upsert`` call (the RAG store's cap); a larger add runs its batches in one transaction.
UPSERT_BATCH = 1000
#: The keywords of ``Memory.recall`` a retriever passes on (the query is the retriever's input).
RECALL_OPTIONS = frozenset(inspect.signature(Memory.recall).parameters) - {"self", "query"}
#: The metadata key under which :class:`PrismRetriever` puts a hit's score and place.
RECALL_KEY = "prism_memory"


class Unrestricted:
    """The type of :data:`UNRESTRICTED`: a read with no document ACL, chosen on purpose."""

    def __repr__(self) -> str:
        return "UNRESTRICTED"


#: ``reader=`` / ``authorization=`` value for a trusted read of every source (no document ACL).
UNRESTRICTED: Final = Unrestricted()

Reader = RagAccessConstraint | Unrestricted


def _reader(value: object) -> RagAccessConstraint | None:
    """The ``authorization`` a RAG read gets: ``None`` for :data:`UNRESTRICTED`, the constraint itself
    (checked), or :class:`InvalidAuthorizationError` when no reader was named."""
    if value is None:
        raise InvalidAuthorizationError(
            "PrismVectorStore reads need a reader: pass authorization=RagAccessConstraint(principal_id, group_ids) "
            "to the call or reader= to the store, or UNRESTRICTED to read every source without document ACL"
        )
    if isinstance(value, Unrestricted):
        return None
    return reader_argument(value)


def _no_other_options(options: dict[str, Any], error: type[Exception]) -> None:
    if options:
        raise error(f"unknown keyword arguments: {', '.join(sorted(options))}")


def _document(match: RagMatch) -> Document:
    return Document(id=match.id, page_content=match.text, metadata=match.metadata)


class PrismVectorStore(VectorStore):
    """A LangChain ``VectorStore`` on prism-memory's RAG store (docs/rag.md).

    ``store``: a :class:`~prism_memory.stores.RagVectorStore` (``create_postgres_vector_store(...)``,
    ``create_memory_vector_store()``). ``embedding``: the LangChain ``Embeddings`` that embeds documents
    and queries (its width must be the store's, else :class:`DimensionMismatchError` at the first write
    or read). ``tenant_id``/``scope``: the tenant and knowledge base every call touches
    (:class:`InvalidScopeError` unless non-blank strings). ``reader``: the default reader of reads
    (a :class:`RagAccessConstraint` authenticated by the host, :data:`UNRESTRICTED`, or ``None``: every
    read must then pass ``authorization=``). ``loop``: the event loop the store's connections belong to
    when it runs in another thread (:class:`EventLoopThread`); ``None`` runs async calls in the caller's
    loop and sync calls in a loop of their own, which suits the emulator's store or an async-only caller.

    Shapes: a document is one chunk, ``id`` = source id = the document's id (a new UUID4 string when it
    has none), ``page_content`` its text (non-blank), ``metadata`` a JSON object. Scores of
    ``similarity_search_with_score`` are cosine similarities in [-1, 1], higher is closer; relevance
    scores map them to [0, 1]. ``k`` is 1..32. Reads take ``filter=`` (prism-memory's metadata filter
    language, docs/api.md "Metadata filters"; :class:`InvalidFilterError` when malformed) and
    ``authorization=``. Errors are prism-memory's (:class:`~prism_memory.errors.PrismMemoryError`), raised
    before anything is written when the input is bad.
    """

    def __init__(
        self,
        store: RagVectorStore,
        embedding: Embeddings,
        *,
        tenant_id: str,
        scope: str,
        reader: Reader | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        scope_arguments(tenant_id, scope)
        if not all(callable(getattr(embedding, name, None)) for name in ("aembed_documents", "aembed_query")):
            raise ConfigurationError("embedding must be a LangChain Embeddings (aembed_documents and aembed_query)")
        if reader is not None and not isinstance(reader, Unrestricted):
            reader = reader_argument(reader)
        self.store = store
        self.tenant_id = tenant_id
        self.scope = scope
        self.reader = reader
        self._embedding = embedding
        self._bridge = LoopBridge(loop)
        self._owned_loop: EventLoopThread | None = None

    @classmethod
    def connect(
        cls, dsn: str, embedding: Embeddings, *, tenant_id: str, scope: str, reader: Reader | None = None,
        **store_options: Any,
    ) -> PrismVectorStore:
        """A store on a Postgres install, opened on an event loop thread of its own (usable from sync and async
        code alike); ``store_options`` go to :func:`~prism_memory.create_postgres_vector_store` (``schema``,
        ``dimensions``, ...). :meth:`close` ends both."""
        from ..postgres import create_postgres_vector_store

        thread = EventLoopThread()
        try:
            store = thread.run(create_postgres_vector_store(dsn, **store_options))
        except BaseException:
            thread.close()
            raise
        vector_store = cls(store, embedding, tenant_id=tenant_id, scope=scope, reader=reader, loop=thread.loop)
        vector_store._owned_loop = thread
        return vector_store

    def close(self) -> None:
        """Close the store and its loop thread when :meth:`connect` opened them (a store passed in stays open)."""
        if self._owned_loop is not None:
            thread, self._owned_loop = self._owned_loop, None
            try:
                thread.run(self.store.close())
            finally:
                thread.close()

    def for_reader(self, reader: Reader) -> PrismVectorStore:
        """The same store and knowledge base read as ``reader`` (for ``get_by_ids`` and retrievers, which take no
        per-call reader); the copy shares the store and never closes it."""
        return type(self)(self.store, self._embedding, tenant_id=self.tenant_id, scope=self.scope, reader=reader,
                          loop=self._bridge.loop)

    def set_document_access(
        self, document_id: str, *, principal_ids: Sequence[str] = (), group_ids: Sequence[str] = (), access_version: int,
    ) -> int:
        """Replace who may read ``document_id`` (its source's grants, for this tenant in every knowledge base; none:
        nobody) at ``access_version``, a version that never goes back (:class:`AccessVersionConflict`, nothing
        changed); returns how many grants are stored. ``RagVectorStore.set_source_access``, named for documents."""
        return self._bridge.call(self._set_access(document_id, principal_ids, group_ids, access_version))

    async def aset_document_access(
        self, document_id: str, *, principal_ids: Sequence[str] = (), group_ids: Sequence[str] = (), access_version: int,
    ) -> int:
        """The async twin of :meth:`set_document_access`."""
        return await self._bridge.acall(self._set_access(document_id, principal_ids, group_ids, access_version))

    async def _set_access(
        self, document_id: str, principal_ids: Sequence[str], group_ids: Sequence[str], access_version: int
    ) -> int:
        return await self.store.set_source_access(
            self.tenant_id, document_id, principal_ids=principal_ids, group_ids=group_ids, access_version=access_version)

    @property
    def embeddings(self) -> Embeddings:
        """The LangChain ``Embeddings`` of documents and queries."""
        return self._embedding

    # writes

    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict] | None = None, *, ids: list[str | None] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed ``texts`` and upsert them as documents, all or nothing; returns their ids in order.

        ``ids`` (one per text; ``None`` items get a UUID4) replace stored documents of the same id.
        ``access_version=`` (an int >= 0) stamps the chunks with the permission version their content was
        indexed under (docs/rag.md, "Access versions"). Raises :class:`InvalidEntryError` for a length
        mismatch, a duplicate id, a blank text, metadata that is not a JSON object or an unknown keyword.
        """
        return self._bridge.call(self._add(list(texts), metadatas, ids, kwargs))

    async def aadd_texts(
        self, texts: Iterable[str], metadatas: list[dict] | None = None, *, ids: list[str | None] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """The async twin of :meth:`add_texts`."""
        return await self._bridge.acall(self._add(list(texts), metadatas, ids, kwargs))

    async def _add(
        self, texts: list[str], metadatas: list[dict] | None, ids: list[str | None] | None, options: dict[str, Any]
    ) -> list[str]:
        access_version = options.pop("access_version", None)
        _no_other_options(options, InvalidEntryError)
        for name, values in (("metadatas", metadatas), ("ids", ids)):
            if values is not None and len(values) != len(texts):
                raise InvalidEntryError(f"{len(values)} {name} for {len(texts)} texts")
        if not texts:
            return []
        ids = [str(uuid.uuid4()) if item is None else item for item in (ids or [None] * len(texts))]
        vectors = await self._embedding.aembed_documents(texts)
        chunks = [
            RagChunk(id=chunk_id, source_id=chunk_id, text=text, embedding=vector,
                     metadata=None if metadatas is None else metadatas[position], access_version=access_version)
            for position, (chunk_id, text, vector) in enumerate(zip(ids, texts, vectors))
        ]
        batches = [chunks[start:start + UPSERT_BATCH] for start in range(0, len(chunks), UPSERT_BATCH)]
        # One upsert refuses a duplicate id; across this adapter's own batches a later one would replace it.
        if len(batches) > 1 and len(set(map(repr, ids))) != len(ids):
            raise InvalidEntryError("duplicate ids in one add")
        if len(batches) == 1:
            await self.store.upsert(self.tenant_id, self.scope, chunks)
        else:
            async with self.store.transaction() as tx:
                for batch in batches:
                    await tx.upsert(self.tenant_id, self.scope, batch)
        return ids

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Delete the documents of ``ids`` (every generation; unknown ids are ignored); returns ``True``.

        ``ids`` is required (:class:`InvalidEntryError` for ``None``, a blank or over-long id or a keyword);
        the sources' ACL grants stay (they belong to the tenant's source, in every scope).
        """
        return self._bridge.call(self._delete(ids, kwargs))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """The async twin of :meth:`delete`."""
        return await self._bridge.acall(self._delete(ids, kwargs))

    async def _delete(self, ids: list[str] | None, options: dict[str, Any]) -> bool:
        _no_other_options(options, InvalidEntryError)
        if ids is None:
            raise InvalidEntryError("delete needs ids: PrismVectorStore never deletes a whole knowledge base")
        ids = list(ids)
        for start in range(0, len(ids), UPSERT_BATCH):
            await self.store.delete(self.tenant_id, self.scope, ids=ids[start:start + UPSERT_BATCH])
        return True

    # reads

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored documents among ``ids`` that this store's ``reader`` may read, in the order of ``ids`` (each
        once); missing or unreadable ids are left out. Raises :class:`InvalidAuthorizationError` without a reader."""
        return self._bridge.call(self._get(ids))

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The async twin of :meth:`get_by_ids`."""
        return await self._bridge.acall(self._get(ids))

    async def _get(self, ids: Sequence[str]) -> list[Document]:
        authorization = _reader(self.reader)
        documents = []
        for document_id in dict.fromkeys(ids):
            chunks = await self.store.get_by_source(self.tenant_id, self.scope, document_id, authorization=authorization)
            documents += [Document(id=chunk.id, page_content=chunk.text, metadata=chunk.metadata)
                          for chunk in chunks if chunk.id == document_id]
        return documents

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The ``min(k, readable matches)`` documents nearest ``query``, closest first (ties by id)."""
        return [document for document, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The async twin of :meth:`similarity_search`."""
        return [document for document, _ in await self.asimilarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> list[tuple[Document, float]]:
        """:meth:`similarity_search` with each document's cosine similarity in [-1, 1]."""
        return self._bridge.call(self._search(query, None, k, kwargs))

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The async twin of :meth:`similarity_search_with_score`."""
        return await self._bridge.acall(self._search(query, None, k, kwargs))

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, **kwargs: Any) -> list[Document]:
        """:meth:`similarity_search` for a query vector of the store's width."""
        return [document for document, _ in self._bridge.call(self._search(None, embedding, k, kwargs))]

    async def asimilarity_search_by_vector(self, embedding: list[float], k: int = 4, **kwargs: Any) -> list[Document]:
        """The async twin of :meth:`similarity_search_by_vector`."""
        return [document for document, _ in await self._bridge.acall(self._search(None, embedding, k, kwargs))]

    async def _search(
        self, query: str | None, vector: Sequence[float] | None, k: int, options: dict[str, Any]
    ) -> list[tuple[Document, float]]:
        filter = options.pop("filter", None)
        authorization = _reader(options.pop("authorization", self.reader))
        _no_other_options(options, InvalidQueryError)
        if vector is None:
            if not isinstance(query, str) or not query.strip():
                raise InvalidQueryError("query must be a non-blank string")
            vector = await self._embedding.aembed_query(query)
        matches = await self.store.query(
            self.tenant_id, self.scope, vector, top_k=k, filter=filter, authorization=authorization
        )
        return [(_document(match), match.score) for match in matches]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        """Cosine similarity in [-1, 1] to a relevance score in [0, 1]."""
        return lambda similarity: (1.0 + similarity) / 2.0

    @classmethod
    def from_texts(
        cls, texts: list[str], embedding: Embeddings, metadatas: list[dict] | None = None, *,
        ids: list[str] | None = None, **kwargs: Any,
    ) -> PrismVectorStore:
        """A :class:`PrismVectorStore` built from ``kwargs`` (``store``, ``tenant_id``, ``scope``, ``reader``,
        ``loop``) holding ``texts``."""
        vector_store = cls(embedding=embedding, **kwargs)
        vector_store.add_texts(texts, metadatas, ids=ids)
        return vector_store

    @classmethod
    async def afrom_texts(
        cls, texts: list[str], embedding: Embeddings, metadatas: list[dict] | None = None, *,
        ids: list[str] | None = None, **kwargs: Any,
    ) -> PrismVectorStore:
        """The async twin of :meth:`from_texts`."""
        vector_store = cls(embedding=embedding, **kwargs)
        await vector_store.aadd_texts(texts, metadatas, ids=ids)
        return vector_store


def _hit_document(hit: RecallHit) -> Document:
    place = {"score": hit.score, "similarity": hit.similarity, "lexical": hit.lexical, "sequence": hit.sequence,
             "importance": hit.importance, "thread_id": hit.thread_id, "resource_id": hit.resource_id}
    return Document(id=hit.id, page_content=hit.text, metadata={**hit.metadata, RECALL_KEY: place})


class PrismRetriever(BaseRetriever):
    """A LangChain retriever over :meth:`Memory.recall <prism_memory.memory.Memory.recall>`.

    ``memory``: the :class:`~prism_memory.memory.Memory` whose thread is searched (with
    ``across_threads=True``, every thread of its resource, as recall defines it). ``k``: hits per query
    (1..32; ``None``: the memory's ``limits.top_k``). ``filter``: a metadata filter (docs/api.md).
    ``recall_options``: further keywords of ``Memory.recall`` (``occurred_after``, ``require_consent``,
    ``lexical_weight``, ...). ``loop``: the event loop the memory's stores belong to when it runs in another
    thread (see :class:`PrismVectorStore`). ``invoke(query, k=..., filter=..., across_threads=..., ...)``
    overrides any of them for one call; a keyword recall does not take raises :class:`InvalidQueryError`.

    Each hit becomes a ``Document`` with the entry's id and text; its ``metadata`` is the entry's, plus
    ``metadata["prism_memory"]`` = ``{"score", "similarity", "lexical", "sequence", "importance",
    "thread_id", "resource_id"}`` (that key of the entry's own metadata is replaced). Adjacent entries are
    not returned. Recall's consent gate, lineage invalidation, legal holds and expiry apply unchanged; its
    errors (:class:`InvalidQueryError`, :class:`LimitExceededError`, ...) reach the caller.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(arbitrary_types_allowed=True)

    memory: Memory
    k: int | None = None
    across_threads: bool = False
    filter: dict[str, Any] | None = None
    recall_options: dict[str, Any] = {}
    loop: asyncio.AbstractEventLoop | None = None

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return LoopBridge(self.loop).call(self._recall(query, kwargs))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return await LoopBridge(self.loop).acall(self._recall(query, kwargs))

    async def _recall(self, query: str, overrides: dict[str, Any]) -> list[Document]:
        options = {"top_k": self.k, "across_threads": self.across_threads, "filter": self.filter, **self.recall_options}
        if "k" in overrides:
            overrides["top_k"] = overrides.pop("k")
        _no_other_options({name: value for name, value in {**options, **overrides}.items() if name not in RECALL_OPTIONS},
                          InvalidQueryError)
        result = await self.memory.recall(query, **{**options, **overrides})
        return [_hit_document(hit) for hit in result.hits]
