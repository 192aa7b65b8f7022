"""Sync and async callers of one asyncio store: where a framework's call runs its coroutine.

A Postgres store's connection pool belongs to the event loop it was opened on. Frameworks call their
adapters both from async code (any loop) and from plain sync code, so an adapter holds a
:class:`LoopBridge`: without a home loop, async calls run in the caller's loop and sync ones in a fresh
loop of their own (right for the emulator's stores, which no loop owns); with one (an
:class:`EventLoopThread`'s), every call is handed to that loop, from any thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from ..errors import ConfigurationError

T = TypeVar("T")


class EventLoopThread:
    """An asyncio event loop running forever in a daemon thread of its own.

    Open stores on it (``thread.run(create_postgres_vector_store(...))``) and hand ``thread.loop`` to an
    adapter: its sync methods then work from any thread that is not this one, and its async methods from
    any other loop. :meth:`close` stops the loop and joins the thread (idempotent).
    """

    def __init__(self, name: str = "prism-memory-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, awaitable: Awaitable[T]) -> T:
        """Run ``awaitable`` on the loop and return its result (re-raising its error); blocks the caller."""
        return asyncio.run_coroutine_threadsafe(_awaited(awaitable), self.loop).result()

    def close(self) -> None:
        """Stop the loop and join its thread."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


class LoopBridge:
    """Runs an adapter's coroutines where its store lives.

    ``loop``: the event loop the store's connections belong to, running in another thread (an
    :class:`EventLoopThread`'s), or ``None`` for a store no loop owns (the emulator's).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if loop is not None and not isinstance(loop, asyncio.AbstractEventLoop):
            raise ConfigurationError(f"loop must be an asyncio event loop or None, got {type(loop).__name__}")
        self.loop = loop

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` to completion for a sync caller.

        Raises :class:`ConfigurationError` (nothing run) when the caller's thread is running an event loop
        that would have to block on itself: the store's home loop, or, without a home loop, any loop; call
        the async twin there instead.
        """
        running = _running_loop()
        if self.loop is None:
            if running is not None:
                coroutine.close()
                raise ConfigurationError("a sync call from inside a running event loop: await the async method instead")
            return asyncio.run(coroutine)
        if running is self.loop:
            coroutine.close()
            raise ConfigurationError("a sync call from the store's own event loop would block it: await the async method")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def acall(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await ``coroutine`` in the caller's loop, or on the home loop when that is another one."""
        if self.loop is None or self.loop is asyncio.get_running_loop():
            return await coroutine
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self.loop))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
