"""The emulator's entry lifecycle: tombstones and the lineage walk (``invalidate_v1``,
``tombstone_from_sources_v1``), ``purge_v1``, ``set_consent_v1``, ``correct_v2``, and retention
(``retention_candidates_v2``, ``set_retention_policy_v1``, ``get_retention_policy_v1``).

A correction goes through the writes group's embedding-model guard (``_use_model``); a purge or a
correction takes the ids out of their thread's grants (the sharing group's ``_unshare``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from ..checks import check_model, check_now, check_scope, check_text, check_texts, real_number, scope_texts
from ..entry_checks import check_consent_change
from ..errors import EntryNotFoundError, InvalidEntryError, LifecycleOrderError, LimitExceededError, LineageLimitError
from ..lexical import lexical_terms
from ..store_arguments import consent_change_arguments, correction_arguments, retention_arguments
from ..types import ConsentChange, EmbeddingModel, MemoryRecord, RetentionPolicy, Scope, check_int_option
from .state import EmulatorState, EntryRow, ThreadKey, by_sequence
from .vectors import float32, norm_squared

#: The reasons ``invalidate_v1`` accepts.
REASONS = ("deleted", "held", "revoked", "corrected", "expired", "source-invalidated")
#: The tombstones of an erasure (forget, retention, legal hold): a grant never clears them (``set_consent_v1``).
ERASURE_REASONS = ("deleted", "expired", "held")
#: The lineage walk's caps: edges, and depth (``invalidate_v1``; :class:`LineageLimitError` past either).
MAX_WALK_EDGES = 256
MAX_WALK_DEPTH = 8
#: An erasure's walk per call (``erase_walk_v1``): entries newly tombstoned, and pending tombstones it starts from.
ERASE_STEP_ENTRIES = 256
ERASE_STEP_STARTS = 64


def lineage_sources(row: EntryRow) -> list[str]:
    """The ids the entry was derived from (``metadata._lineage.sourceIds``; none when absent)."""
    lineage = row.metadata.get("_lineage")
    return list(lineage.get("sourceIds", [])) if isinstance(lineage, dict) else []


class LifecycleOperations(EmulatorState):
    """``invalidate``, ``purge``, ``set_consent``, ``correct``, ``retention_candidates`` and the retention
    policies of :class:`prism_memory.stores.VectorStore`."""

    async def invalidate(self, scope: Scope, ids: Sequence[str], reason: str, now: datetime | None = None) -> list[str]:
        """Mirror of ``invalidate_v1``: tombstones (self unless corrected, and dependents), legal hold for 'held'.
        Returns the ids tombstoned, sorted; 1..64 ids (:class:`LimitExceededError`), a reason of
        :data:`REASONS` (:class:`InvalidEntryError`)."""
        scope_texts(scope)
        ids = check_texts(ids, "ids", InvalidEntryError)
        check_text(reason, "reason", InvalidEntryError)
        now = check_now(now)
        key = self._key(scope)
        if not 1 <= len(ids) <= 64:
            raise LimitExceededError(f"invalidate: between 1 and 64 ids per call, got {len(ids)}")
        if reason not in REASONS:
            raise InvalidEntryError(f"invalidate: unknown reason {reason!r}")
        rows = self._threads.get(key, {})
        reached = [
            entry_id
            for entry_id in sorted(self._walk(key, ids))
            if entry_id in rows and not (reason == "corrected" and entry_id in ids)
        ]
        tombstones = self._tombstones.setdefault(key, {})
        for entry_id in reached:
            kept = tombstones.setdefault(entry_id, (reason, rows[entry_id].sequence))
            if reason in ERASURE_REASONS and kept[0] not in ERASURE_REASONS:  # an erasure's reason replaces another's
                tombstones[entry_id] = (reason, kept[1])
        if reason == "held":
            for entry_id in ids:
                if entry_id in rows:
                    rows[entry_id].legal_hold = True
                    rows[entry_id].updated_at = now
        return reached

    def _walk(self, key: ThreadKey, ids: Sequence[str]) -> set[str]:
        """Mirror of invalidate_v1's walk: breadth-first over distinct lineage edges; returns every id reached."""
        dependents: dict[str, set[str]] = {}
        for row in self._threads.get(key, {}).values():
            for source in lineage_sources(row):
                if source != row.id:
                    dependents.setdefault(source, set()).add(row.id)
        visited = set(ids)
        frontier = set(ids)
        edges: set[tuple[str, str]] = set()
        depth = 0
        while frontier:
            depth += 1
            found = {(source, dependent) for source in frontier for dependent in dependents.get(source, ())}
            edges |= found
            if len(edges) > MAX_WALK_EDGES:
                raise LineageLimitError(f"lineage walk passed the cap of {MAX_WALK_EDGES} edges")
            new = {dependent for _, dependent in found} - visited
            if new and depth > MAX_WALK_DEPTH:
                raise LineageLimitError(f"lineage walk passed the cap of depth {MAX_WALK_DEPTH}")
            visited |= new
            frontier = new
        return visited

    async def erase_walk(
        self, scope: Scope, ids: Sequence[str], reason: str, now: datetime | None = None
    ) -> tuple[list[str], int]:
        """Mirror of ``erase_walk_v1``: tombstone ``ids`` (0..64) with an erasure's ``reason`` and walk their
        dependents, at most 256 untombstoned ones and 8 levels a call, from ``ids`` and up to 64 pending
        tombstones; what it cannot reach stays pending. Returns the stored ids tombstoned or reached, sorted, and
        how many tombstones of the thread stay pending. :class:`LimitExceededError` over 64 ids,
        :class:`InvalidEntryError` for another reason."""
        scope_texts(scope)
        ids = check_texts(ids, "ids", InvalidEntryError)
        check_text(reason, "reason", InvalidEntryError)
        now = check_now(now)
        key = self._key(scope)
        if len(ids) > 64:
            raise LimitExceededError(f"erase: at most 64 ids per call, got {len(ids)}")
        if reason not in ERASURE_REASONS:
            raise InvalidEntryError(f"erase: unknown reason {reason!r}")
        rows = self._threads.get(key, {})
        tombstones = self._tombstones.setdefault(key, {})
        pending = self._pending.setdefault(key, set())
        start = set(ids) | set(sorted(pending)[:ERASE_STEP_STARTS])
        visited, walked, cut = self._erase_steps(key, start)
        for entry_id in sorted(visited & rows.keys()):
            kept = tombstones.get(entry_id, (reason, rows[entry_id].sequence))
            erasure = reason in ERASURE_REASONS and kept[0] not in ERASURE_REASONS
            tombstones[entry_id] = (reason, kept[1]) if erasure else kept
        pending -= walked - cut  # settled: walked, and nothing left out
        pending |= cut & rows.keys()
        if reason == "held":
            for entry_id in ids:
                if entry_id in rows:
                    rows[entry_id].legal_hold = True
                    rows[entry_id].updated_at = now
        return sorted(visited & rows.keys()), len(pending)

    def _erase_steps(self, key: ThreadKey, start: set[str]) -> tuple[set[str], set[str], set[str]]:
        """Mirror of ``erase_walk_reach_v1``, the walk from ``start``: breadth-first over edges in code-point
        order ('source' chr(31) 'dependent'), through dependents without a tombstone or with a pending one, 256
        untombstoned ones and 8 levels at most. Returns the ids visited, the ids whose dependents it looked for,
        and those left pending."""
        rows = self._threads.get(key, {})
        tombstones, pending = self._tombstones.get(key, {}), self._pending.get(key, set())
        dependents: dict[str, set[str]] = {}
        for row in rows.values():
            for source in lineage_sources(row):
                if source != row.id:
                    dependents.setdefault(source, set()).add(row.id)
        visited, frontier, walked, budget, depth = set(start), set(start), set(), ERASE_STEP_ENTRIES, 0
        while frontier:
            depth += 1
            walked |= frontier
            found = sorted(((source, dependent) for source in frontier for dependent in dependents.get(source, ())
                            if dependent not in visited), key=lambda edge: f"{edge[0]}\x1f{edge[1]}")
            new = {dependent for _, dependent in found if dependent not in tombstones}
            if depth > MAX_WALK_DEPTH or len(new) > budget:
                taken = [] if depth > MAX_WALK_DEPTH else list(dict.fromkeys(d for _, d in found if d in new))[:budget]
                cut = set(taken) | {source for source, d in found if d in new and d not in taken}
                return visited | set(taken) | {d for _, d in found if d not in new}, walked, cut
            budget -= len(new)
            frontier = {dependent for _, dependent in found if dependent in new or dependent in pending}
            visited |= {dependent for _, dependent in found}
        return visited, walked, set()

    def _tombstone_from_sources(self, key: ThreadKey, ids: Sequence[str]) -> None:
        """Mirror of ``tombstone_from_sources_v1``: an entry with an invalid lineage source is invalid."""
        rows = self._threads.get(key, {})
        tombstones = self._tombstones.setdefault(key, {})
        doomed = [
            rows[entry_id]
            for entry_id in ids
            if entry_id in rows
            and entry_id not in tombstones
            and any(source != entry_id and self._invalid_source(key, source) for source in lineage_sources(rows[entry_id]))
        ]
        for row in doomed:  # one statement in SQL: decided before any of them lands
            tombstones[row.id] = ("source-invalidated", row.sequence)

    def _invalid_source(self, key: ThreadKey, source: str) -> bool:
        """A lineage source that is tombstoned, or present and hidden, revoked or held."""
        if source in self._tombstones.get(key, {}):
            return True
        row = self._threads.get(key, {}).get(source)
        return row is not None and (not row.consent_visible or row.consent_revoked_at is not None or row.legal_hold)

    async def purge(self, scope: Scope, ids: Sequence[str]) -> int:
        """Mirror of ``purge_v1``: delete tombstoned, unheld bodies; an untombstoned one raises first
        (:class:`LifecycleOrderError`). Returns how many were deleted; 1..64 ids (:class:`LimitExceededError`)."""
        key, unheld, untombstoned = self._purge_targets(scope, ids)
        if untombstoned:
            raise LifecycleOrderError("purge: invalidate the entries (invalidate_v1) before deleting them")
        return self._delete_bodies(key, unheld)

    async def purge_tombstoned(self, scope: Scope, ids: Sequence[str]) -> tuple[int, list[str]]:
        """Mirror of ``purge_v2``: delete the tombstoned, unheld bodies of ``ids`` (1..64, else
        :class:`LimitExceededError`); an untombstoned one (written again since) is kept and returned, sorted."""
        key, unheld, untombstoned = self._purge_targets(scope, ids)
        return self._delete_bodies(key, unheld - untombstoned), sorted(untombstoned)

    def _purge_targets(self, scope: Scope, ids: Sequence[str]) -> tuple[ThreadKey, set[str], set[str]]:
        """The checked thread key, the stored unheld ids among ``ids``, and those of them without a tombstone."""
        scope_texts(scope)
        ids = check_texts(ids, "ids", InvalidEntryError)
        key = self._key(scope)
        if not 1 <= len(ids) <= 64:
            raise LimitExceededError(f"purge: between 1 and 64 ids per call, got {len(ids)}")
        rows = self._threads.get(key, {})
        tombstones = self._tombstones.get(key, {})
        unheld = {entry_id for entry_id in ids if entry_id in rows and not rows[entry_id].legal_hold}
        return key, unheld, {entry_id for entry_id in unheld if entry_id not in tombstones}

    def _delete_bodies(self, key: ThreadKey, doomed: set[str]) -> int:
        """Delete the bodies of ``doomed`` and the grants that shared them; returns how many."""
        rows = self._threads.get(key, {})
        for entry_id in doomed:
            del rows[entry_id]
        self._unshare(key, doomed)
        return len(doomed)

    def _locked_row(self, key: ThreadKey, entry_id: str) -> EntryRow:
        """The row ``set_consent_v1`` and ``correct_v2`` lock, else :class:`EntryNotFoundError`."""
        row = self._threads.get(key, {}).get(entry_id)
        if row is None:
            raise EntryNotFoundError(f"no entry {entry_id} in this thread")
        return row

    async def set_consent(
        self, scope: Scope, entry_id: str, change: ConsentChange, now: datetime | None = None
    ) -> tuple[MemoryRecord, list[str]]:
        """Mirror of ``set_consent_v1``: revoke writes tombstones first; grant clears the entry's own (never an
        erasure's). Returns the entry as changed and the ids the revoke invalidated."""
        scope_texts(scope)
        check_text(entry_id, "entry_id", InvalidEntryError)
        change = consent_change_arguments(change)
        now = check_now(now)
        key = self._key(scope)
        check_consent_change(change)
        row = self._locked_row(key, entry_id)
        revoking = change.visible is False or change.revoked_at is not None
        granting = change.visible is True and change.revoked_at is None
        invalidated: list[str] = []
        if revoking:
            invalidated = await self.invalidate(scope, [entry_id], "revoked", now)
        elif granting:
            tombstones = self._tombstones.get(key, {})
            if entry_id in tombstones and tombstones[entry_id][0] not in ERASURE_REASONS:
                del tombstones[entry_id]  # never an erasure's: its deletes may follow
        row.consent_source = change.source or row.consent_source or "user"
        row.consent_scope = change.scope or row.consent_scope or "thread"
        row.consent_visible = False if revoking else row.consent_visible if change.visible is None else change.visible
        if granting:
            row.consent_granted_at = change.granted_at or now
            row.consent_revoked_at = None
        else:
            row.consent_granted_at = change.granted_at or row.consent_granted_at
            if revoking:
                row.consent_revoked_at = change.revoked_at or now
        row.updated_at = now
        if granting:
            self._tombstone_from_sources(key, [entry_id])
        return row.record(invalidated)

    async def correct(
        self, scope: Scope, entry_id: str, text: str, embedding: Sequence[float], now: datetime | None = None,
        model: EmbeddingModel | None = None,
    ) -> tuple[MemoryRecord, list[str]]:
        """Mirror of ``use_embedding_model_v1`` (with a ``model``), then of ``correct_v2``: invalidate dependents,
        replace text and embedding, mark the lineage corrected, then re-derive the entry from its sources.
        Returns the corrected entry and the ids invalidated (the entry's own last when its sources are invalid)."""
        scope_texts(scope)
        values = correction_arguments(entry_id, text, embedding)
        now = check_now(now)
        check_model(model, [len(values)])
        models = self._use_model([scope], model)
        key = self._key(scope)
        if not text.strip():
            raise InvalidEntryError("the corrected text must not be blank")
        vector = float32(values, "the corrected embedding")
        rows = self._threads.get(key, {})
        self._check_dimensions(rows, vector.shape[0])
        row = self._locked_row(key, entry_id)
        invalidated = await self.invalidate(scope, [entry_id], "corrected", now)
        row.text = text
        row.terms = frozenset(lexical_terms(text))
        row.embedding = vector
        row.norm_squared = norm_squared(vector)
        lineage = row.metadata.get("_lineage")
        row.metadata["_lineage"] = {**(lineage if isinstance(lineage, dict) else {"sourceIds": []}), "reason": "corrected"}
        row.updated_at = now
        self._unshare(key, {entry_id})
        if entry_id not in self._tombstones.get(key, {}):  # re-derived from its own sources (lineage cycles)
            self._tombstone_from_sources(key, [entry_id])
            if entry_id in self._tombstones.get(key, {}):
                invalidated = [*invalidated, entry_id]
        self._models.update(models)
        return row.record(invalidated)

    async def retention_candidates(
        self,
        scope: Scope,
        max_age_days: float | None,
        max_entries: int | None,
        batch_size: int,
        now: datetime | None = None,
    ) -> list[tuple[str, bool]]:
        """Mirror of ``retention_candidates_v2``: oldest expired entries (by expiry, the stored policies,
        ``max_age_days`` or ``max_entries``) until ``batch_size`` (1..64) unheld ones, each as (id, held).
        :class:`LimitExceededError` for ``max_age_days`` outside 0..36500 or a negative ``max_entries``."""
        scope_texts(scope)
        max_age_days = retention_arguments(max_age_days, max_entries, batch_size)
        now = check_now(now)  # in UTC: 24-hour days, whatever the clock's time zone
        key = self._key(scope)
        check_int_option("batch_size", batch_size, 1, 64)
        if (max_age_days is not None and not 0 <= max_age_days <= 36500) or (max_entries is not None and max_entries < 0):
            raise LimitExceededError("max_age_days must be within 0..36500 and max_entries >= 0")
        rows = by_sequence(self._threads.get(key, {}))
        newest_rank = {row.id: rank for rank, row in enumerate(reversed(rows), start=1)}
        cutoff = now - timedelta(days=max_age_days) if max_age_days is not None else None
        chosen: list[tuple[str, bool]] = []
        deletable = 0
        for row in rows:
            expired = not self._live(key, row, now) or (cutoff is not None and row.created_at < cutoff) or (
                max_entries is not None and newest_rank[row.id] > max_entries
            )
            if not expired:
                continue
            deletable += 0 if row.legal_hold else 1
            if deletable > batch_size:
                break
            chosen.append((row.id, row.legal_hold))
        return chosen

    async def set_retention_policy(
        self, scope: Scope, max_age_days: float | None, now: datetime | None = None
    ) -> float | None:
        """Mirror of ``set_retention_policy_v1``: the thread's policy, or the resource's when the scope has no thread
        (``None`` removes it). Returns ``max_age_days``; :class:`LimitExceededError` outside 0..36500."""
        scope_texts(scope)
        max_age_days = real_number(max_age_days, "max_age_days", LimitExceededError)
        check_now(now)
        check_scope(scope, thread_required=False)
        if max_age_days is not None and not 0 <= max_age_days <= 36500:
            raise LimitExceededError(f"max_age_days must be a number from 0 to 36500, got {max_age_days!r}")
        key = (scope.tenant_id, scope.resource_id, scope.thread_id or "")
        if max_age_days is None:
            self._policies.pop(key, None)
        else:
            self._policies[key] = max_age_days
        return max_age_days

    async def get_retention_policy(self, scope: Scope) -> RetentionPolicy:
        """Mirror of ``get_retention_policy_v1``: the resource's policy, and the thread's when the scope names one."""
        scope_texts(scope)
        check_scope(scope, thread_required=False)
        return RetentionPolicy(self._policies.get((scope.tenant_id, scope.resource_id, "")),
                               None if scope.thread_id is None
                               else self._policies.get((scope.tenant_id, scope.resource_id, scope.thread_id)))
