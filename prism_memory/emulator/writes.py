"""The emulator's writes: ``remember_v3``, ``remember_batch_v3``, ``reembed_v1`` and the embedding-model
guard they run first (``use_embedding_model_v1``).

A write upserts rows, re-derives their tombstones from their lineage sources
and invalidates what came out invalid (through the lifecycle group's
``invalidate`` and ``_tombstone_from_sources``); written ids leave the grants
of their thread (the sharing group's ``_unshare``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import numpy as np

from ..checks import as_utc, check_model, check_now, embedding_labels, entry_label, scope_texts
from ..entry_checks import check_expiry_range
from ..errors import DimensionMismatchError, EmbeddingModelMismatchError, LimitExceededError
from ..lexical import lexical_terms
from ..store_arguments import check_batch_writes, record_arguments, reembed_arguments
from ..types import EmbeddingModel, EntryRecord, Scope
from .lifecycle import lineage_sources
from .rules import check_records
from .state import NEVER, EmulatorState, EntryRow, ThreadKey
from .vectors import float32, norm_squared


class WriteOperations(EmulatorState):
    """``remember``, ``remember_batch`` and ``reembed`` of :class:`prism_memory.stores.VectorStore`, with the
    write checks and the embedding-model guard."""

    async def remember(
        self, scope: Scope, records: Sequence[EntryRecord], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> tuple[int, list[str]]:
        """Mirror of ``use_embedding_model_v1`` (with a ``model``), then of ``remember_v3``: validate, upsert all
        records, re-derive their tombstones, walk from the invalid ones. Returns (records written, ids invalidated)."""
        scope_texts(scope)
        arguments = record_arguments(records)
        now = check_now(now)
        check_model(model, [len(values) for _, values in arguments])
        if not records:
            self._key(scope)  # remember_v3 checks the scope before it returns for no entries
            return 0, []
        models = self._use_model([scope], model)
        checked = self._check_write(scope, records, arguments, now)
        with self._restored_on_error([self._key(scope)]):
            written = await self._write(scope, records, *checked, now)
        self._models.update(models)
        return written

    async def remember_batch(
        self, writes: Sequence[tuple[Scope, Sequence[EntryRecord]]], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> list[tuple[int, list[str]]]:
        """Mirror of ``use_embedding_model_v1`` for every thread with rows (with a ``model``), then of
        ``remember_batch_v3``: each thread checked then written, in (resource, thread) code-point order, so the
        first failure is the one SQL meets; on a failure every thread of the batch is restored. Returns one
        (records written, ids invalidated) per write, in the order of ``writes``."""
        check_batch_writes(writes)
        arguments = {scope: record_arguments(records) for scope, records in writes}  # all types first, as Postgres
        now = check_now(now)
        check_model(model, [len(values) for items in arguments.values() for _, values in items])
        order = sorted((scope for scope, records in writes if records), key=lambda s: (s.resource_id, s.thread_id))
        models = self._use_model(order, model) if order else {}
        by_scope = dict(writes)
        results: dict[Scope, tuple[int, list[str]]] = {}
        with self._restored_on_error([self._key(scope) for scope in order]):
            for scope in order:
                checked = self._check_write(scope, by_scope[scope], arguments[scope], now)
                results[scope] = await self._write(scope, by_scope[scope], *checked, now)
        self._models.update(models)
        return [results.get(scope, (0, [])) for scope, _records in writes]

    async def reembed(
        self, scope: Scope, ids: Sequence[str], texts: Sequence[str], embeddings: Sequence[Sequence[float]],
        model: EmbeddingModel | None = None,
    ) -> int:
        """Mirror of ``use_embedding_model_v1`` switching the thread to ``model`` (when given, with embeddings),
        then of ``reembed_v1``: new embeddings for entries whose text is still ``texts``; nothing else changes.
        Returns how many entries got one; :class:`LimitExceededError` unless the three lists pair up (at most 128)."""
        scope_texts(scope)
        values = reembed_arguments(ids, texts, embeddings)
        check_model(model, [len(vector) for vector in values])
        models = self._use_model([scope], model, switch=True) if values else {}
        key = self._key(scope)
        if len(ids) != len(embeddings) or len(ids) != len(texts) or len(ids) > 128:
            raise LimitExceededError("reembed: ids, texts and embeddings must pair up, at most 128")
        vectors = [float32(vector, label) for vector, label in zip(values, embedding_labels(ids))]
        rows = self._threads.get(key, {})
        for vector in vectors:
            self._check_dimensions(rows, vector.shape[0])
        updated = 0
        for entry_id, text, vector in zip(ids, texts, vectors):
            if entry_id in rows and rows[entry_id].text == text:
                rows[entry_id].embedding = vector
                rows[entry_id].norm_squared = norm_squared(vector)
                updated += 1
        self._models.update(models)
        return updated

    def _use_model(
        self, scopes: Sequence[Scope], model: EmbeddingModel | None, switch: bool = False
    ) -> dict[ThreadKey, tuple[str, int]]:
        """Mirror of ``use_embedding_model_v1`` for the threads of ``scopes``: the records the write makes,
        which the caller stores once the write succeeded (they commit with it). ``None``: no guard.
        :class:`EmbeddingModelMismatchError` when a thread holding entries recorded another model (unless
        ``switch``)."""
        if model is None:
            return {}
        keys = sorted({self._key(scope) for scope in scopes}, key=lambda key: (key[1], key[2]))
        wanted = (model.model_id, model.dimensions)
        records = {}
        for key in keys:
            rows = self._threads.get(key, {})
            self._check_dimensions(rows, model.dimensions)
            recorded = self._models.get(key)
            if recorded == wanted:
                continue
            if recorded is not None and recorded[0] != model.model_id and not switch and rows:
                raise EmbeddingModelMismatchError(
                    f"thread {key[2]!r} (resource {key[1]!r}) holds entries embedded with model {recorded[0]!r} "
                    f"({recorded[1]} dimensions), not {model.model_id!r}: run rebuild_index with the new embedder "
                    "to switch the thread's model"
                )
            records[key] = wanted
        return records

    def _check_write(
        self, scope: Scope, records: Sequence[EntryRecord], arguments: list[tuple[str, np.ndarray]], now: datetime
    ) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
        """remember_v3's checks, after :func:`record_arguments`, before anything is written: each record's
        stored metadata and float32 embedding."""
        self._key(scope)
        metadata = check_records(records)
        check_expiry_range(records, now)
        vectors = [
            float32(values, f"{entry_label(position, record.id)}: embedding")
            for position, (record, (_, values)) in enumerate(zip(records, arguments), start=1)
        ]
        if len({vector.shape[0] for vector in vectors}) > 1:
            raise DimensionMismatchError("the embeddings in one batch differ in dimensions")
        self._check_dimensions(self._threads.get(self._key(scope), {}), vectors[0].shape[0])
        return metadata, vectors

    async def _write(
        self, scope: Scope, records: Sequence[EntryRecord], metadata: list[dict[str, Any]], vectors: list[np.ndarray],
        now: datetime,
    ) -> tuple[int, list[str]]:
        """remember_v3's upsert of checked records: rows replaced, their grants and tombstones cleared, then
        tombstones re-derived from lineage and the invalid ones' dependents invalidated (64 ids a call)."""
        key = self._key(scope)
        rows = self._threads.setdefault(key, {})
        tombstones = self._tombstones.setdefault(key, {})
        max_sequence = max(
            [0, *(row.sequence for row in rows.values()), *(seq for _, seq in tombstones.values() if seq is not None)]
        )
        written = {
            record.id: _upserted(record, rows.get(record.id), vector, meta, max_sequence + position, now)
            for position, (record, vector, meta) in enumerate(zip(records, vectors, metadata), start=1)
        }
        rows.update(written)
        self._lineage_expiry(key, list(written))
        self._unshare(key, set(written))
        for entry_id in written:
            tombstones.pop(entry_id, None)
        self._tombstone_from_sources(key, list(written))
        invalid = sorted(
            entry_id for entry_id, row in written.items() if not row.injectable(False) or entry_id in tombstones
        )
        dependents: list[str] = []
        for start in range(0, len(invalid), 64):
            dependents += await self.invalidate(scope, invalid[start : start + 64], "source-invalidated", now)
        return len(records), sorted({*invalid, *dependents})


    def _lineage_expiry(self, key: ThreadKey, ids: list[str]) -> None:
        """Mirror of ``lineage_expiry_v1`` after ``ids`` of thread ``key`` were written: each takes its sources'
        times afresh from its direct sources, then the entries derived from them, transitively, take the written
        entries' times where those are earlier (followed only while they move a time earlier)."""
        rows = self._threads.get(key, {})
        fresh = {}
        for entry_id in ids:  # one statement in SQL: every source read as it was before it
            sources = [rows[source].lineage_times() for source in lineage_sources(rows[entry_id])
                       if source != entry_id and source in rows]
            fresh[entry_id] = (min((created for created, _ in sources), default=None),
                               min((expires for _, expires in sources if expires != NEVER), default=None))
        for entry_id, (created, expires) in fresh.items():  # rows replaced, not changed: see _restored_on_error
            rows[entry_id] = replace(rows[entry_id], sources_created_at=created, sources_expire_at=expires)
        dependents: dict[str, list[EntryRow]] = {}
        for row in rows.values():
            for source in dict.fromkeys(lineage_sources(row)):
                if source != row.id:
                    dependents.setdefault(source, []).append(row)
        flow = {(entry_id, *rows[entry_id].lineage_times()) for entry_id in ids}
        frontier = list(flow)
        while frontier:
            reached = []
            for source, created, expires in frontier:
                for row in dependents.get(source, ()):
                    own_created, own_expires = row.lineage_times()
                    if created < own_created or expires < own_expires:
                        item = (row.id, min(own_created, created), min(own_expires, expires))
                        if item not in flow:
                            flow.add(item)
                            reached.append(item)
            frontier = reached
        earliest: dict[str, tuple[datetime, datetime]] = {}
        for entry_id, created, expires in flow:
            kept = earliest.get(entry_id, (created, expires))
            earliest[entry_id] = (min(kept[0], created), min(kept[1], expires))
        for entry_id, (created, expires) in earliest.items():  # one statement: every time decided first
            row = rows[entry_id]
            own_created, own_expires = row.lineage_times()
            if created < own_created or expires < own_expires:
                rows[entry_id] = replace(
                    row, sources_created_at=created if created < own_created else row.sources_created_at,
                    sources_expire_at=expires if expires < own_expires else row.sources_expire_at)


def _upserted(
    record: EntryRecord, existing: EntryRow | None, vector: np.ndarray, metadata: dict[str, Any], next_sequence: int,
    now: datetime,
) -> EntryRow:
    """The row remember_v3's upsert leaves: the record's columns; what it leaves unset (sequence, consent, expiry)
    kept from the ``existing`` row, else the defaults (``next_sequence``, legacy consent, no expiry)."""
    consent = record.consent
    if record.sequence is not None:
        sequence = record.sequence
    elif existing is not None:
        sequence = existing.sequence
    else:
        sequence = next_sequence
    return EntryRow(
        id=record.id,
        text=record.text,
        metadata=metadata,
        embedding=vector,
        norm_squared=norm_squared(vector),
        terms=frozenset(lexical_terms(record.text)),
        sequence=sequence,
        importance=None if record.importance is None else min(1.0, max(0.0, float(record.importance))),
        consent_source=consent.source if consent else existing.consent_source if existing else None,
        consent_scope=consent.scope if consent else existing.consent_scope if existing else None,
        consent_visible=consent.visible if consent else existing.consent_visible if existing else True,
        consent_granted_at=as_utc(consent.granted_at) if consent else existing.consent_granted_at if existing else None,
        consent_revoked_at=as_utc(consent.revoked_at) if consent else existing.consent_revoked_at if existing else None,
        legal_hold=existing.legal_hold if existing else False,
        created_at=existing.created_at if existing else now,
        updated_at=now,
        expires_at=(as_utc(record.expires_at) if record.expires_at is not None
                    else now + record.ttl if record.ttl is not None
                    else existing.expires_at if existing else None),
        occurred_at=(as_utc(record.occurred_at) if record.occurred_at is not None
                     else existing.occurred_at if existing else None),
    )
