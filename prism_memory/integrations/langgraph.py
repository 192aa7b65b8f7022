"""LangGraph's long-term memory store (``BaseStore``) on prism-memory (docs/integrations.md, "LangGraph").

Mapping. A :class:`PrismStore` is one tenant of a :class:`~prism_memory.memory.Memory` and, by default, its
one resource; with ``resource_label=i`` the namespace's label ``i`` names the resource instead (``("memories",
user_id)`` with ``resource_label=1``: resource ``user_id``), so users are apart by SQL scope. Each LangGraph
namespace is one thread of its resource (``thread_id = "lg:" + compact JSON of the labels``), each
item one entry whose id is the item's key. The entry's metadata holds ``{"value": <the item's value>,
"langgraph": {"namespace": {"s0": label0, "s1": ...}, "depth": n, "key": key, "ttl": minutes | None}}``, so a
namespace prefix or a value ``filter`` is one SQL metadata filter, matched label for label by equality:
``("user_1",)`` never reaches ``("user-1",)`` or ``("user_10",)``.

Rules stay in SQL: an item is written with a consent (default ``MemoryConsent(scope="user")``, which lets
search reach it from every namespace of the resource); ``delete`` is :meth:`Memory.forget`; expiry is the
entry's ``ttl``, enforced at read time by the store.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from langgraph.store.base import (
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)
from langgraph.store.base import _validate_namespace as validate_namespace
from langgraph.store.base.batch import AsyncBatchedBaseStore
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from ..checks import check_scope
from ..errors import ConfigurationError, InvalidEntryError, InvalidQueryError, LimitExceededError, PrismMemoryError
from ..memory import Memory, create_memory
from ..types import MemoryConsent, MemoryEntry, MemoryLineage, MemoryRecord, RecallHit, Scope

#: The reserved key of an item's value that carries consent and lineage; it is taken out before storing.
PRISM_KEY = "__prism__"
#: The thread a search recalls from: never a namespace's thread, so it holds no item of its own.
SEARCH_THREAD = "lg:search"
#: The expiry of an item written without a TTL: the longest the store takes (a rewrite then always sets one).
NO_TTL = timedelta(days=36_500)
#: Most hits one recall returns (``limits.top_k``'s hard cap): a query search reaches offset + limit <= 32.
MAX_QUERY_HITS = 32
PAGE = 200


def namespace_thread(namespace: tuple[str, ...]) -> str:
    """The thread id of ``namespace``; :class:`InvalidNamespaceError` for a namespace LangGraph refuses, a label
    holding prism-memory's reserved ``/agent:`` segment, or an id over 256 bytes."""
    validate_namespace(namespace)
    if any("/agent:" in label for label in namespace):
        raise InvalidNamespaceError(f"namespace label may not hold the reserved segment '/agent:': {namespace}")
    thread = "lg:" + json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))
    if len(thread.encode()) > 256:
        raise InvalidNamespaceError(f"namespace is over 250 bytes as JSON: {namespace}")
    return thread


def namespace_filter(prefix: Sequence[str]) -> dict[str, Any]:
    """The metadata filter keeping the items whose namespace starts with ``prefix`` (label for label)."""
    return {f"langgraph.namespace.s{i}": label for i, label in enumerate(prefix)}


def value_filter(filter: dict[str, Any] | None) -> dict[str, Any]:
    """LangGraph's search ``filter`` (top-level value keys to a value or to ``{"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|
    "$lte": operand}``) as prism-memory's metadata filter on ``value``; :class:`InvalidQueryError` otherwise."""
    if filter is None:
        return {}
    if not isinstance(filter, dict):
        raise InvalidQueryError(f"filter must be a dict, got {type(filter).__name__}")
    out: dict[str, Any] = {}
    for key, condition in filter.items():
        if not isinstance(key, str) or not key or key.startswith("$"):
            raise InvalidQueryError(f"filter key must be a value field, got {key!r}")
        if isinstance(condition, dict) and any(str(k).startswith("$") for k in condition):
            bad = [k for k in condition if k not in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")]
            if bad:
                raise InvalidQueryError(f"filter operator {bad[0]!r} is not one of LangGraph's")
        out[f"value.{key}"] = condition
    return out


def _indexed_text(value: dict[str, Any], fields: Sequence[str] | None, key: str) -> str:
    """What is embedded and lexically indexed: the texts at ``fields`` (LangGraph's path syntax), one a line;
    an item without indexed text is stored under its key (it stays out of semantic search's reach in
    LangGraph; here its key is its text)."""
    texts: list[str] = []
    for field in fields or ():
        path = "$" if field == "$" else tokenize_path(field)
        texts.extend(text for text in get_text_at_path(value, path) if text.strip())
    return "\n".join(texts) if texts else key


def _consent_and_lineage(value: dict[str, Any], default: MemoryConsent) -> tuple[dict[str, Any], MemoryConsent, MemoryLineage | None]:
    """Split the reserved ``__prism__`` key off ``value``: ``{"consent": {MemoryConsent's fields},
    "lineage": {"source_ids": [keys of the same namespace], "reason": str}}``."""
    if PRISM_KEY not in value:
        return value, default, None
    extra = value[PRISM_KEY]
    if not isinstance(extra, dict) or set(extra) - {"consent", "lineage"}:
        raise InvalidEntryError(f"value[{PRISM_KEY!r}] takes only 'consent' and 'lineage'")
    try:
        consent = MemoryConsent(**extra["consent"]) if "consent" in extra else default
        raw = extra.get("lineage")
        lineage = MemoryLineage(tuple(raw["source_ids"]), raw.get("reason")) if raw is not None else None
    except (TypeError, KeyError) as error:
        raise InvalidEntryError(f"value[{PRISM_KEY!r}] is malformed: {error}") from error
    return {k: v for k, v in value.items() if k != PRISM_KEY}, consent, lineage


def _record_namespace(record: MemoryRecord | RecallHit) -> tuple[str, ...]:
    stored = record.metadata["langgraph"]
    return tuple(stored["namespace"][f"s{i}"] for i in range(stored["depth"]))


class PrismStore(AsyncBatchedBaseStore):
    """A LangGraph ``BaseStore`` on one tenant and resource of prism-memory, both backends alike.

    ``memory``: a :class:`Memory` of the tenant and resource (its thread is ignored), or build one with
    :meth:`create`. ``index``: LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``, default
    ``["$"]``); the memory's embedder embeds, ``fields`` choose the text. ``ttl``: ``TTLConfig``
    (``default_ttl`` and ``refresh_on_read``, in minutes). ``consent``: the consent items get unless their
    value carries one under ``__prism__``. ``resource_label``: the position of the namespace label naming the
    resource (``None``: the memory's resource holds every namespace); then every namespace, search prefix and
    list prefix must name that label (``InvalidNamespaceError`` otherwise), and nothing is read across
    resources. Must be created inside a running event loop (LangGraph's rule; ``ConfigurationError`` outside
    one); its sync methods work from other threads. Errors: ``InvalidNamespaceError`` for a bad namespace,
    :class:`~prism_memory.errors.PrismMemoryError` subclasses otherwise, raised before anything is written.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Memory,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        consent: MemoryConsent | None = None,
        resource_label: int | None = None,
    ) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            self._task = None  # what AsyncBatchedBaseStore's __del__ reads
            raise ConfigurationError(
                "create PrismStore inside a running event loop (in an async function run by asyncio.run); a sync "
                "graph then runs in another thread: await asyncio.to_thread(graph.invoke, ...)") from None
        super().__init__()
        if resource_label is not None and (isinstance(resource_label, bool) or not isinstance(resource_label, int)
                                           or resource_label < 0):
            raise InvalidQueryError(f"resource_label must be a label position (an int >= 0), got {resource_label!r}")
        self.memory = memory
        self.resource_label = resource_label
        self.index_config = index
        self.ttl_config = ttl
        self.consent = consent or MemoryConsent(source="user", scope="user")
        self._fields = list((index or {}).get("fields") or ["$"]) if index else None

    @classmethod
    def create(
        cls,
        *,
        tenant_id: str,
        resource_id: str,
        index: IndexConfig | None = None,
        embedder: Any = None,
        ttl: TTLConfig | None = None,
        consent: MemoryConsent | None = None,
        resource_label: int | None = None,
        **options: Any,
    ) -> PrismStore:
        """A store on a new :func:`create_memory` (``vector_store``/``working_store``: ``None`` is the emulator).
        The embedder is ``embedder``, else ``index["embed"]`` (a LangChain ``Embeddings``, a function or a
        provider string, through LangChain's bridge), else the hash embedder (no index: no semantic search).
        ``options`` go to :func:`create_memory` (``vector_store``, ``working_store``, ``clock``, ``limits``,
        ``lexical_weight``, ...)."""
        from ..embedders.langchain import LangChainEmbedder
        from ..embedding import create_hash_embedder

        if embedder is None and index and index.get("embed") is not None:
            embedder = LangChainEmbedder(ensure_embeddings(index["embed"]), dimensions=index["dims"])
        embedder = embedder or create_hash_embedder(64)
        memory = create_memory(tenant_id=tenant_id, resource_id=resource_id, embedder=embedder, **options)
        return cls(memory, index=index, ttl=ttl, consent=consent, resource_label=resource_label)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; puts are checked, then written; a failing op raises."""
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, PutOp):
                results.append(await self._put(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._list_namespaces(op))
            else:
                raise InvalidQueryError(f"unknown store operation {type(op).__name__}")
        return results

    def _resource(self, labels: Sequence[str]) -> Memory:
        """The memory of the resource holding ``labels`` (a namespace or a search/list prefix): the store's own,
        or with ``resource_label`` the resource the label at that position names; a prefix too short to name
        it (or naming it ``"*"``) raises ``InvalidNamespaceError``: nothing is read across resources."""
        if self.resource_label is None:
            return self.memory
        if len(labels) <= self.resource_label or labels[self.resource_label] == "*":
            raise InvalidNamespaceError(
                f"this store keeps a resource per label {self.resource_label}: name it, got {tuple(labels)}")
        resource = labels[self.resource_label]
        tenant = self.memory.config.scope.tenant_id
        try:
            scope = check_scope(Scope(tenant, resource, None), thread_required=False)
        except PrismMemoryError as error:
            raise InvalidNamespaceError(f"label {resource!r} is not a valid resource id: {error}") from error
        return Memory(dataclasses.replace(self.memory.config, scope=scope))

    # -- reads ---------------------------------------------------------------------------------------

    async def _records(
        self, base: Memory, thread: str | None, filter: dict[str, Any], limit: int | None = None
    ) -> list[MemoryRecord]:
        """The live records ``filter`` keeps, of one thread or (``None``) of ``base``'s resource, in the store's
        order ((thread,) sequence, id); the export gate drops expired, revoked and invisible entries."""
        memory = base.for_thread(thread) if thread else base
        scope = memory.config.scope
        identity = scope if thread else {"tenant_id": scope.tenant_id, "resource_id": scope.resource_id}
        records: list[MemoryRecord] = []
        cursor = None
        while True:
            if thread:
                page = await memory.export_memory(identity, cursor, PAGE, filter=filter)
            else:
                page = await memory.export_resource(identity, cursor, PAGE, filter=filter)
            records.extend(page.entries)
            cursor = page.next_cursor
            if cursor is None or (limit is not None and len(records) >= limit):
                return records

    async def _get(self, op: GetOp) -> Item | None:
        thread = namespace_thread(tuple(op.namespace))
        records = await self._records(self._resource(op.namespace), thread, {"langgraph.key": op.key}, 1)
        if not records:
            return None
        if op.refresh_ttl:
            await self._refresh(records)
        return _item(records[0], Item)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise InvalidQueryError("limit and offset must be >= 0")
        filter = {**namespace_filter(op.namespace_prefix), **value_filter(op.filter)}
        base = self._resource(op.namespace_prefix)
        if op.query is None or self._fields is None:
            records = await self._records(base, None, filter, op.offset + op.limit)
            kept = records[op.offset:op.offset + op.limit]
            if op.refresh_ttl:
                await self._refresh(kept)
            return [_item(record, SearchItem) for record in kept]
        wanted = op.offset + op.limit
        if wanted > MAX_QUERY_HITS:
            raise LimitExceededError(f"a query search reaches the top {MAX_QUERY_HITS} items: offset + limit = {wanted}")
        if op.limit == 0:
            return []
        searcher = base.for_thread(SEARCH_THREAD)
        hits = (await searcher.recall(op.query, top_k=wanted, across_threads=True, filter=filter)).hits[op.offset:]
        if op.refresh_ttl:
            await self._refresh_hits(base, hits)
        return [_item(hit, SearchItem, score=hit.score) for hit in hits]

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        suffix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                prefix = tuple(condition.path)
            else:
                suffix = tuple(condition.path)
        filter = {f"langgraph.namespace.s{i}": label for i, label in enumerate(prefix) if label != "*"}
        seen: set[tuple[str, ...]] = set()
        for record in await self._records(self._resource(prefix), None, filter):
            namespace = _record_namespace(record)
            if not _matches(namespace, prefix, suffix):
                continue
            seen.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(seen)[op.offset:op.offset + op.limit]

    # -- writes --------------------------------------------------------------------------------------

    async def _put(self, op: PutOp) -> None:
        namespace = tuple(op.namespace)
        thread = namespace_thread(namespace)
        memory = self._resource(namespace).for_thread(thread)
        if op.value is None:
            await memory.forget([op.key])
            return None
        if not isinstance(op.value, dict):
            raise InvalidEntryError(f"value must be a dict, got {type(op.value).__name__}")
        value, consent, lineage = _consent_and_lineage(op.value, self.consent)
        ttl = op.ttl if op.ttl is not None else (self.ttl_config or {}).get("default_ttl")
        fields = self._fields if op.index is None else (op.index or None)
        text = _indexed_text(value, fields if self._fields is not None else None, op.key)
        metadata = {
            "value": value,
            "langgraph": {
                "namespace": {f"s{i}": label for i, label in enumerate(namespace)},
                "depth": len(namespace), "key": op.key, "ttl": ttl,
            },
        }
        entry = MemoryEntry(op.key, text, metadata, consent=consent, lineage=lineage, ttl=_ttl(ttl))
        await memory.remember([entry], wait=True)
        return None

    async def _refresh_hits(self, base: Memory, hits: Sequence[RecallHit]) -> None:
        """:meth:`_refresh` for search hits with a TTL: their records (consent, lineage) are read first, a thread at
        a time (hits without a TTL cost nothing)."""
        by_thread: dict[str, list[str]] = {}
        for hit in hits:
            if hit.metadata["langgraph"].get("ttl") is not None:
                by_thread.setdefault(hit.thread_id, []).append(hit.id)
        for thread, keys in by_thread.items():
            await self._refresh(await self._records(base, thread, {"langgraph.key": {"$in": keys}}))

    async def _refresh(self, records: Sequence[MemoryRecord]) -> None:
        """Rewrite each record with its TTL from now (``refresh_on_read``); items without a TTL are left alone."""
        for record in records:
            ttl = record.metadata["langgraph"].get("ttl")
            if ttl is None:
                continue
            metadata = {k: v for k, v in record.metadata.items() if k != "_lineage"}
            raw = record.metadata.get("_lineage")
            lineage = MemoryLineage(tuple(raw["sourceIds"]), raw.get("reason")) if raw else None
            namespace = _record_namespace(record)
            memory = self._resource(namespace).for_thread(namespace_thread(namespace))
            entry = MemoryEntry(record.id, record.text, metadata, consent=record.consent, lineage=lineage, ttl=_ttl(ttl))
            await memory.remember([entry], wait=True)


def _ttl(minutes: float | None) -> timedelta:
    if minutes is None:
        return NO_TTL
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not minutes > 0:
        raise InvalidEntryError(f"ttl must be a positive number of minutes, got {minutes!r}")
    return timedelta(minutes=minutes)


def _matches(namespace: tuple[str, ...], prefix: tuple[str, ...], suffix: tuple[str, ...]) -> bool:
    """LangGraph's namespace match: each label equal, ``"*"`` matching any one label."""
    if len(namespace) < len(prefix) or len(namespace) < len(suffix):
        return False
    head = all(p in ("*", n) for p, n in zip(prefix, namespace))
    tail = all(s in ("*", n) for s, n in zip(reversed(suffix), reversed(namespace)))
    return head and tail


def _item(record: MemoryRecord | RecallHit, kind: type, **extra: Any) -> Any:
    """LangGraph's ``Item``/``SearchItem`` of a stored record or a recall hit (both carry the entry's metadata,
    id and times)."""
    return kind(
        namespace=_record_namespace(record),
        key=record.id,
        value=record.metadata["value"],
        created_at=record.created_at,
        updated_at=record.updated_at,
        **extra,
    )
