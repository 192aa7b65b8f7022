"""The background write queue of one memory: ``remember`` returns before its entries are stored; ``flush`` waits.

``Memory.remember(wait=False)`` hands its write to :meth:`WriteQueue.start`
and returns. Every write, awaited or not, holds :meth:`WriteQueue.ordered`
around its embed and store call, so automatic sequences follow call order.
The operations that must see the writes started before them call
:meth:`WriteQueue.settle` once, after their own input checks and before their
first embed or store call: the rule of what waiting means, and what a failed
write does to the next caller, lives only there.

The rule: an operation waits for the pending writes, but never raises a
failure of theirs and is never refused because of one (a user's erasure must
not fail because an unrelated earlier write did). A failed background write
is logged at once (an error on the ``prism_memory`` logger), counted in
:attr:`WriteQueue.failed`, and re-raised by the next :meth:`flush`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, Literal

logger = logging.getLogger("prism_memory")

#: The operations that wait for pending writes first, because each reads or changes the thread's entries:
#: a pending write must not be missed by a read, nor land after (and undo) a change.
#: Working-memory calls and ``remember`` itself do not wait.
SettlingOperation = Literal[
    "recall", "share_with", "set_consent", "correct", "forget", "apply_retention", "export_memory", "rebuild_index",
    "count_resource", "export_resource", "forget_resource",
]


class WriteQueue:
    """Pending background writes of one memory, the failures they left, and the lock that orders all writes.

    A memory and each of its ``child()`` memories have their own queue.
    """

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._entries = 0
        self._first_failure: BaseException | None = None
        self._failed = 0
        self._order = asyncio.Lock()

    @property
    def pending(self) -> int:
        """How many entries the unfinished background writes hold (``RememberResult.pending``)."""
        return self._entries

    @property
    def idle(self) -> bool:
        """``True`` when no background write is unfinished (``RememberResult.done``)."""
        return not self._tasks

    @property
    def failed(self) -> int:
        """How many background writes failed since the last :meth:`flush` (which reports them)."""
        return self._failed

    def ordered(self) -> asyncio.Lock:
        """The lock each write holds around its embed and store call (``async with queue.ordered():``)."""
        return self._order

    def start(self, write: Coroutine[Any, Any, Any], entries: int) -> None:
        """Run ``write`` (holding ``entries`` entries) in the background.

        A failure is logged at once and kept for the next :meth:`flush`; a
        cancelled write is dropped silently.
        """
        task = asyncio.create_task(write)
        self._tasks.add(task)
        self._entries += entries

        def finished(done: asyncio.Task[Any]) -> None:
            self._tasks.discard(done)
            self._entries -= entries
            if not done.cancelled() and (failure := done.exception()) is not None:
                self._failed += 1
                if self._first_failure is None:
                    self._first_failure = failure
                logger.error("background remember of %d entries failed: %s", entries, type(failure).__name__)

        task.add_done_callback(finished)

    async def _wait(self) -> None:
        """Wait until no background write is unfinished, writes started while waiting included."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def flush(self) -> None:
        """Wait for the background writes; re-raise the first failure since the last flush.

        Each failure is reported once: after raising, :attr:`failed` is 0
        again, and later failures from the same wait are not raised (they
        were logged).
        """
        await self._wait()
        failure, self._first_failure, self._failed = self._first_failure, None, 0
        if failure is not None:
            raise failure

    async def settle(self, operation: SettlingOperation) -> None:
        """Called by ``operation`` before it reads or changes the thread's entries: wait for pending writes.

        So every such operation sees the writes started before it. A failed
        write does not fail ``operation``: its failure stays for :meth:`flush`
        (module docstring). This is the one place to give an operation a
        different rule.
        """
        await self._wait()

    async def close(self) -> None:
        """Wait for the background writes; a failure is logged (it already was, as an error), not raised."""
        try:
            await self.flush()
        except Exception as exc:
            logger.debug("pending write failed before close: %s", type(exc).__name__)
