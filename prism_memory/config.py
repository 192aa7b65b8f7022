"""One memory's configuration: what :func:`~prism_memory.memory.create_memory` checked, held in one frozen object."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from .checks import check_aware
from .embedding import Embedder, embedding_model
from .errors import ConfigurationError
from .redaction import Redaction
from .scoring import LEXICAL_WEIGHT
from .stores import VectorStore, WorkingStore
from .types import EmbeddingModel, MemoryLimits, Scope
from .working import WorkingMemoryValidator

#: Host hook called with the invalidated entry ids after their tombstones land
#: and before any body is deleted. May be async.
InvalidationHook = Callable[[list[str]], "None | Awaitable[None]"]


def utc_now() -> datetime:
    """The default clock: the current time, timezone-aware, in UTC."""
    return datetime.now(timezone.utc)


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Everything a :class:`~prism_memory.memory.Memory` is built from, already checked by ``create_memory``.

    ``scope``: the memory's tenant / resource / (optional) thread.
    ``embedder``: ``dimensions`` plus async ``embed(texts)``. ``vector_store``
    and ``working_store``: the stores (the emulator's by default).
    ``validator``: the working-memory schema and hook, capped at
    ``limits.working_memory_bytes``. ``template``: the
    ``working_memory_template`` (``None`` renders compact JSON). ``limits``:
    the per-memory :class:`MemoryLimits`. ``redaction``: ``secrets`` and
    ``redactor``. ``require_consent``: recall's default consent gate.
    ``on_invalidate``: the :data:`InvalidationHook` or ``None``. ``clock``:
    returns the time stamped on writes. ``importance_from``: derives an entry's
    importance from its ``reflection`` at write time, or ``None``. ``lexical_weight``: the weight of recall's
    lexical leg unless a call gives one.

    A delegated agent's memory shares all of it but the scope
    (``dataclasses.replace(config, scope=...)``, see ``Memory.child``).
    """

    scope: Scope
    embedder: Embedder
    vector_store: VectorStore
    working_store: WorkingStore
    validator: WorkingMemoryValidator
    template: str | None
    limits: MemoryLimits
    redaction: Redaction
    require_consent: bool
    on_invalidate: InvalidationHook | None
    clock: Callable[[], datetime]
    importance_from: Callable[[dict[str, Any]], float] | None
    lexical_weight: float = LEXICAL_WEIGHT

    @property
    def model(self) -> EmbeddingModel | None:
        """The embedder's identity for the embedding-model guard (``model_id`` and width), or ``None``
        for an embedder without a ``model_id`` (the width rule alone)."""
        return embedding_model(self.embedder)

    def now(self) -> datetime:
        """The clock's current time; :class:`ConfigurationError` if it is naive or outside years 1..9999."""
        return check_aware(self.clock(), "the clock's time", ConfigurationError)
