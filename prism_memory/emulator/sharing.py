"""The emulator's share grants: ``share_with_v1``, ``unshare_v1``, and the live grants a recall reads."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..checks import check_aware, check_now, check_scope, check_shared_ids, check_texts, is_agent_resource, scope_texts
from ..errors import InvalidEntryError, InvalidScopeError, LimitExceededError
from ..types import Scope
from .state import EmulatorState, ThreadKey

#: Ids one grant names at the most (``share_with_v1``).
MAX_SHARED_IDS = 256


class SharingOperations(EmulatorState):
    """``share_with`` of :class:`prism_memory.stores.VectorStore`, and the grant rules the other groups apply."""

    async def share_with(
        self,
        scope: Scope,
        child_resource_id: str,
        child_thread_id: str,
        source_ids: Sequence[str],
        expires_at: datetime | None = None,
        now: datetime | None = None,
    ) -> int:
        """Mirror of ``share_with_v1``: grant the child's read of ``source_ids``; no ids revokes. Returns how many
        of them the thread holds (the grant names those). :class:`InvalidEntryError` for sharing with itself,
        :class:`InvalidScopeError` for a child of another resource than the parent's or its delegated agents',
        :class:`LimitExceededError` over 256 ids or for an ``expires_at`` not in the future."""
        scope_texts(scope)
        scope_texts(Scope(scope.tenant_id, child_resource_id, child_thread_id))
        check_texts(source_ids, "shared ids", InvalidEntryError)
        check_aware(expires_at, "expires_at")
        now = check_now(now)
        key = self._key(scope)
        check_scope(Scope(scope.tenant_id, child_resource_id, child_thread_id), thread_required=True)
        if (child_resource_id, child_thread_id) == (scope.resource_id, scope.thread_id):
            raise InvalidEntryError("a thread cannot share with itself")
        if child_resource_id != scope.resource_id and not is_agent_resource(scope.resource_id, child_resource_id):
            raise InvalidScopeError(
                "child_resource_id must be the parent's resource or a delegated agent's (<resource>/agent:<agent id>)"
            )
        if len(source_ids) > MAX_SHARED_IDS:
            raise LimitExceededError(f"a share grant lists at most {MAX_SHARED_IDS} ids, got {len(source_ids)}")
        check_shared_ids(source_ids)
        if expires_at is not None and expires_at <= now:
            raise LimitExceededError("expires_at must be in the future")
        grant_key = (scope.tenant_id, scope.resource_id, scope.thread_id or "", child_resource_id, child_thread_id)
        granted = frozenset(source_ids) & self._threads.get(key, {}).keys()  # the entries as they are now
        if not granted:
            self._grants.pop(grant_key, None)
            return 0
        self._grants[grant_key] = (granted, expires_at)
        return len(granted)

    def _unshare(self, key: ThreadKey, ids: set[str]) -> None:
        """Mirror of ``unshare_v1``: written or deleted ids leave every grant of their thread."""
        for grant_key, (shared, expires_at) in list(self._grants.items()):
            if grant_key[:3] == key and shared & ids:
                self._grants[grant_key] = (shared - ids, expires_at)

    def _live_grants(self, key: ThreadKey, parent_thread_id: str, now: datetime) -> dict[ThreadKey, frozenset[str]]:
        """The grants to the thread ``key`` from a thread ``parent_thread_id`` (of its resource or another) that
        have not expired at ``now``: parent thread -> the ids granted, parents in code-point order (recall_v4's
        ``grants``)."""
        granted: dict[ThreadKey, frozenset[str]] = {}
        for (tenant, resource, parent, child_resource, child_thread), (ids, expires_at) in sorted(self._grants.items()):
            if (tenant, child_resource, child_thread, parent) == (*key, parent_thread_id) and (
                expires_at is None or expires_at > now
            ):
                granted[(tenant, resource, parent)] = granted.get((tenant, resource, parent), frozenset()) | ids
        return granted
