"""Parity harness: run one scenario on the emulator and on Postgres, compare the outcomes.

A scenario is ``async def scenario(backend) -> value``; ``backend.memory(...)``
creates a memory on that backend (same arguments as ``create_memory`` minus the
stores). :meth:`Backends.run` returns the emulator's outcome after asserting the
Postgres outcome equals it: same values (floats to 1e-6), same order, or the
same error type.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Awaitable, Callable
from typing import Any

from prism_memory import create_hash_embedder, create_memory, create_postgres_memory_stores
from prism_memory.emulator import create_memory_vector_store, create_memory_working_store
from prism_memory.schema import SchemaConfig

TOLERANCE = 1e-6


class Clock:
    """A settable clock for ``create_memory(clock=...)``, so both backends stamp the same times."""

    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


@dataclasses.dataclass
class Raised:
    """A scenario's outcome when it raised: the error type (messages may differ)."""

    error: type[BaseException]


def normalise_times(fields: dict[str, Any], created: str, occurred: str, dropped: tuple[str, ...]) -> dict[str, Any]:
    """``fields`` normalised, ``dropped`` left out, and the event time ``occurred`` named ``"the write time"`` when it
    equals ``created`` (both backends default it to their own clock's write time)."""
    normalised = {key: normalise(item) for key, item in fields.items() if key not in dropped}
    if occurred in fields and fields[occurred] == fields.get(created):
        normalised[occurred] = "the write time"
    return normalised


def normalise(value: Any) -> Any:
    """Dataclasses to dicts (timestamps dropped: each backend has its own clock; an event time that is the write
    time, its default, named so), recursively."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
        return normalise_times(fields, "created_at", "occurred_at", ("created_at", "updated_at"))
    if isinstance(value, dict):
        return normalise_times(value, "createdAt", "occurredAt", ())
    if isinstance(value, (list, tuple)):
        return [normalise(item) for item in value]
    return value


def assert_same(left: Any, right: Any, path: str = "") -> None:
    """Assert two normalised outcomes are equal: same types, floats within :data:`TOLERANCE`."""
    if isinstance(left, float) or isinstance(right, float):
        assert isinstance(left, (int, float)) and isinstance(right, (int, float)), f"{path}: {left!r} != {right!r}"
        assert math.isclose(left, right, rel_tol=0, abs_tol=TOLERANCE), f"{path}: {left!r} != {right!r}"
    elif isinstance(left, dict) and isinstance(right, dict):
        assert left.keys() == right.keys(), f"{path}: keys {sorted(left)} != {sorted(right)}"
        for key in left:
            assert_same(left[key], right[key], f"{path}.{key}")
    elif isinstance(left, list) and isinstance(right, list):
        assert len(left) == len(right), f"{path}: {len(left)} items != {len(right)}: {left!r} vs {right!r}"
        for index, (a, b) in enumerate(zip(left, right)):
            assert_same(a, b, f"{path}[{index}]")
    else:
        assert type(left) is type(right), f"{path}: {type(left).__name__} {left!r} != {type(right).__name__} {right!r}"
        assert left == right, f"{path}: {left!r} != {right!r}"


class Backend:
    """One backend: builds memories over its stores."""

    def __init__(self, name: str, vector_store: Any, working_store: Any, dimensions: int) -> None:
        self.name = name
        self.vector_store = vector_store
        self.working_store = working_store
        self.embedder = create_hash_embedder(dimensions or 64)

    def memory(self, **kwargs: Any):
        kwargs.setdefault("tenant_id", "t1")
        kwargs.setdefault("resource_id", "user-ada")
        kwargs.setdefault("thread_id", "thread-1")
        kwargs.setdefault("embedder", self.embedder)
        return create_memory(vector_store=self.vector_store, working_store=self.working_store, **kwargs)


class Backends:
    """The emulator and Postgres side by side (``async with``)."""

    def __init__(self, dsn: str, config: SchemaConfig) -> None:
        self.dsn = dsn
        self.config = config
        self.emulator: Backend | None = None
        self.postgres: Backend | None = None
        self._stores = None

    async def __aenter__(self) -> Backends:
        self._stores = await create_postgres_memory_stores(
            self.dsn, dimensions=self.config.dimensions, skip_migrations=True
        )
        dims = self.config.dimensions
        self.emulator = Backend("memory", create_memory_vector_store(dims), create_memory_working_store(), dims)
        self.postgres = Backend("postgres", self._stores.vector_store, self._stores.working_store, dims)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stores.close()

    @property
    def each(self) -> list[Backend]:
        return [self.emulator, self.postgres]

    async def outcome(self, scenario: Callable[[Backend], Awaitable[Any]], backend: Backend) -> Any:
        try:
            return normalise(await scenario(backend))
        except Exception as exc:  # compared by type across backends
            return Raised(type(exc))

    async def run(self, scenario: Callable[[Backend], Awaitable[Any]]) -> Any:
        """Run ``scenario`` on both backends, assert equal outcomes, return the emulator's."""
        expected = await self.outcome(scenario, self.emulator)
        actual = await self.outcome(scenario, self.postgres)
        assert_same(expected, actual, "outcome")
        return expected
