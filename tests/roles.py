"""Database roles in tests: a URL as another login role, and tenant bindings (Postgres only)."""

from __future__ import annotations

import warnings
from urllib.parse import parse_qs, unquote, urlparse

import pytest
from prism_memory import grant_app_role

from conftest import CITUS, TEST_CONFIG, dsn_for


def as_role(dsn: str, role: str) -> str:
    """``dsn`` (a Unix-socket or TCP URL of the test server) as login role ``role``, without a password."""
    parsed = urlparse(dsn)
    query = parse_qs(parsed.query)
    host = query["host"][0] if "host" in query else parsed.hostname or "localhost"
    port = query["port"][0] if "port" in query else parsed.port or 5432
    return dsn_for(host, port, role, unquote(parsed.path.lstrip("/")))


#: On the Citus lane, grant_app_role(..., tenants=...) refuses (tests/schema/test_citus.py checks it): bindings are kept by
#: role OID, which differs from node to node (docs/scaling.md).
needs_bindings = pytest.mark.skipif(CITUS, reason="tenant-bound roles are not supported on a Citus-distributed install")


def grant(pg_dsn: str, role: str, tenants: list[str] | None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the test install is owned by a superuser
        grant_app_role(pg_dsn, role, TEST_CONFIG, tenants)
