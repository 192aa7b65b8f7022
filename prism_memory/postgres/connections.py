"""How the Postgres stores use their pool: which connections are checked before use, and the retry rule.

A restart, a failover or a proxy's idle timeout ends every pooled connection
at once; each is found dead only when it is next used. The rule
(``docs/errors.md``, "When the database goes away"):

1. **A write is sent only on a connection checked just before.** A write
   (every operation that changes rows) and a ``transaction()`` take a
   connection from the pool and check it with psycopg_pool's own
   ``AsyncConnectionPool.check_connection`` (an empty query) before sending
   anything. A connection that fails the check goes back to the pool, which
   discards it and connects a replacement; then ``pool.check()`` checks every
   idle connection, so the other connections the same restart ended go too,
   and another connection is taken: at most :data:`CHECKS` per call. Nothing
   of the call was sent on a connection that failed its check.
2. **Once sent, only a read is sent again**, once (:data:`SENDS`), on a
   checked connection, and only when its connection was lost
   (:func:`prism_memory.postgres.errors.database_unavailable`). So a read is sent
   without the check (saving its round trip on the hot path), and a dead
   connection costs it one failed send. A write is never sent twice: a
   statement that reached the server may have committed before its
   connection was lost, and sending it again could apply it twice (an
   ``invalidate`` or ``correct`` that runs twice does not do what one does).
   A transaction is never run again either. Rule 4 is the one case where a
   write is sent twice.
3. **No connection within the pool's timeout is not retried**: the pool has
   waited that long already and keeps reconnecting in the background
   ("Reconnecting", below).
4. **A statement a read-only server refused is sent again, once, read or
   write.** SQLSTATE ``25006`` (``read_only_sql_transaction``) means the
   connection reached a server that takes no writes: a standby, or an old
   primary fenced read-only after a failover. The server refused the
   transaction before it changed anything, so sending it again cannot apply
   it twice. The pool is drained first (``AsyncConnectionPool.drain()``):
   every pooled connection may lead to the same server, and the new ones
   follow the DSN's ``target_session_attrs=read-write`` to the primary
   (``docs/operations.md``). A refusal of the second send raises
   :class:`~prism_memory.errors.StoreUnavailableError`. A ``transaction()``
   is not run again, but the pool is drained all the same.

What is not retried raises :class:`~prism_memory.errors.StoreUnavailableError`
(or :class:`~prism_memory.errors.StoreClosedError` once the pool is closed),
with the psycopg or psycopg_pool exception as ``__cause__``.

The pool's own ``check`` parameter would check every connection, reads'
too, and after a failed check it waits (1 s, then 2 s, 4 s ...) before taking
the next connection: with eight dead connections a call times out (30 s by
default) before it reaches a live one. Sweeping with ``pool.check()``
replaces them all at once.

**Reconnecting.** A connection found dead is replaced by a background
attempt to connect; psycopg_pool repeats a failed attempt after 1 s, then
doubles the wait (2 s, 4 s ... 64 s), without a cap, until its
``reconnect_timeout`` (5 min). So after an outage of *t* seconds the first
connection can come back up to about *t* seconds after the server did: the
attempts after an 80 s outage fall at 63 s and 127 s, 47 s after the server
is back. :class:`ReconnectingPool` caps that wait at
:data:`RECONNECT_DELAY_CAP`: while the server is down each missing
connection is attempted about once a second (at most ``max_size`` attempts
a second, each refused at once), and a call made after the server accepts
connections again gets one within about that second, whatever the outage's
length up to the ``reconnect_timeout``. The pool builds its reconnect state
(``AttemptWithBackoff``) in ``_add_connection``, which the subclass overrides
only to pass its capped one.

**The warmest connection first.** psycopg_pool hands idle connections out in
turn (the one idle longest first), so sequential calls visit every backend,
each with cold caches: on a 2-core machine a small recall took about 0.06 ms
longer through a pool of two than through one connection. :class:`ReconnectingPool`
hands out the connection returned last instead (its ``_pool`` deque rotated
one step before psycopg_pool takes its head); the pool still shrinks by
closing the one idle longest.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, nullcontext
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool
from psycopg_pool.base import AttemptWithBackoff

from .errors import READ_ONLY_SERVER, database_unavailable, translate

#: At most this many connections are taken (and checked) for one call.
CHECKS = 3
#: A statement is sent at most this many times: a write a second time only after a read-only refusal (rule 4).
SENDS = 2
#: The longest wait, in seconds, between two attempts to reconnect a pooled connection.
RECONNECT_DELAY_CAP = 1.0


class _CappedBackoff(AttemptWithBackoff):
    """psycopg_pool's reconnect backoff (1 s, doubling) with each wait capped at :data:`RECONNECT_DELAY_CAP`."""

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, RECONNECT_DELAY_CAP)


class ReconnectingPool(AsyncConnectionPool):
    """An ``AsyncConnectionPool`` whose reconnect attempts wait at most :data:`RECONNECT_DELAY_CAP` apart and
    which hands out the connection returned last first.

    Everything else is psycopg_pool's, ``reconnect_timeout`` included (see "Reconnecting" and "The warmest
    connection first" above).
    """

    async def _add_connection(self, attempt: AttemptWithBackoff | None, growing: bool = False) -> None:
        await super()._add_connection(attempt or _CappedBackoff(timeout=self.reconnect_timeout), growing=growing)

    async def _get_ready_connection(self, timeout: float | None) -> psycopg.AsyncConnection | None:
        self._pool.rotate(1)  # the connection returned last becomes the head psycopg_pool takes
        return await super()._get_ready_connection(timeout)


@asynccontextmanager
async def pooled_connection(pool: AsyncConnectionPool, checked: bool) -> AsyncIterator[psycopg.AsyncConnection]:
    """A pooled connection; with ``checked``, one that answered ``check_connection`` just now (rule 1 above).

    Raises the psycopg_pool error when no connection comes free within the
    pool's timeout (``PoolTimeout``) or the pool is closed (``PoolClosed``),
    and the last check's ``OperationalError`` when :data:`CHECKS` connections
    in a row failed their check. The caller translates them. A read-only
    refusal raised in the block drains the pool (rule 4) and is re-raised.
    """
    lost: psycopg.OperationalError | None = None
    for _ in range(CHECKS):
        async with pool.connection() as conn:
            try:
                if checked:
                    await pool.check_connection(conn)
            except psycopg.OperationalError as exc:
                lost = exc
            else:
                try:
                    yield conn
                except psycopg.Error as exc:
                    if exc.sqlstate == READ_ONLY_SERVER:
                        await pool.drain()
                    raise
                return
        await pool.check()  # the dead connection went back (and was discarded); now the idle ones
    assert lost is not None
    raise lost


async def fetch(
    pool: AsyncConnectionPool,
    query: Any,
    params: Sequence[Any],
    read: bool = False,
    in_transaction: bool = False,
    guard: tuple[Any, Sequence[Any]] | None = None,
    binary: bool = False,
) -> list[tuple[Any, ...]]:
    """Run one statement on a pooled connection and return its rows (rules 1-4 above).

    ``read``: the statement changes nothing, so it is sent without a check and
    sent again once, on a checked connection, when its connection is lost.
    Read or not, a statement a read-only server refused is sent again once.
    ``in_transaction``: send it inside ``BEGIN``/``COMMIT`` (two more round
    trips). The stores ask for it for writes on a Citus-distributed install:
    an autocommit call delegated to a worker runs at the worker's own default
    isolation level (a database-level ``repeatable read`` reaches the workers,
    a session ``SET`` does not, and the writers refuse it, PM017), while Citus
    opens a transaction block on the worker at the coordinator's level.
    ``guard``: a ``(query, params)`` statement sent first, on the same connection, in one pipeline (one
    round trip for both; :data:`prism_memory.operations.GUARDS`), in one transaction with the statement:
    the pipeline's implicit one (up to its Sync), or ``BEGIN``/``COMMIT`` with ``in_transaction``. So
    nothing is written when the guard raises, and what it checked (under the locks it took) holds until
    the statement commits.
    ``binary``: rows come back in the binary format (times, numbers and JSON parse faster than from text;
    the values are the same); not with a ``guard``.
    psycopg errors become the package's typed errors
    (:func:`prism_memory.postgres.errors.translate`), the original as ``__cause__``.
    """
    for send in range(1, SENDS + 1):
        sent = False
        try:
            async with pooled_connection(pool, checked=not read or send > 1) as conn:
                sent = True
                if guard is not None:
                    return await _guarded(conn, guard, query, params, in_transaction)
                async with conn.transaction() if in_transaction else nullcontext():
                    cursor = await conn.execute(query, params, binary=binary)
                    return await cursor.fetchall()
        except psycopg.Error as exc:
            again = read and database_unavailable(exc) or exc.sqlstate == READ_ONLY_SERVER
            if not (sent and send < SENDS and again):
                raise translate(exc) from exc
    raise AssertionError("unreachable")


async def _guarded(
    conn: psycopg.AsyncConnection, guard: tuple[Any, Sequence[Any]], query: Any, params: Sequence[Any],
    in_transaction: bool,
) -> list[tuple[Any, ...]]:
    """The guard, then the statement, pipelined on ``conn`` in one transaction (see :func:`fetch`).

    Neither is prepared: psycopg would count a statement queued behind a guard that raised as prepared,
    though the aborted pipeline never ran its ``PREPARE`` (the next use then fails with "prepared
    statement does not exist"). The functions' own plans are cached inside them either way.
    """
    async with conn.pipeline():
        async with conn.transaction() if in_transaction else nullcontext():
            await conn.execute(guard[0], guard[1], prepare=False)
            cursor = await conn.execute(query, params, prepare=False)
            return await cursor.fetchall()
