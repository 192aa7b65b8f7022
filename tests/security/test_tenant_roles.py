"""Tenant-bound roles.

A role bound to tenants with ``grant_app_role(..., tenants=[...])`` may call the API functions only for those
tenants, inside every SQL function (PM016, TenantAccessDeniedError), and is stamped with the server's clock
whatever ``p_now`` it sends. Postgres only: the emulator has no database roles (it behaves like a trusted one).
Look-alike tenants (acme / acme-corp) with distinct entry ids per tenant.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timedelta, timezone
from urllib.parse import urlparse

import psycopg
import pytest
from prism_memory import (
    InvalidScopeError,
    StoreError,
    TenantAccessDeniedError,
    create_hash_embedder,
    create_memory,
    create_postgres_memory_stores,
    revoke_app_role,
    role_tenants,
)
from prism_memory.cli import main
from prism_memory.errors import SQLSTATE_ERRORS
from prism_memory.operations import API_FUNCTIONS

from conftest import TEST_CONFIG, TEST_DIMENSIONS
from roles import as_role, grant, needs_bindings

TENANTS = {"acme": ["acme-plan", "acme-budget"], "acme-corp": ["corp-merger", "corp-salaries"]}


async def seed(pg_dsn: str) -> None:
    """Each tenant's own entries and working memory, written by the (trusted) owner."""
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS)
    try:
        for tenant, ids in TENANTS.items():
            memory = memory_for(stores, tenant)
            await memory.remember([{"id": entry_id, "text": f"{tenant} secret {entry_id}"} for entry_id in ids], wait=True)
            await memory.update_working({"owner": tenant})
    finally:
        await stores.close()


def memory_for(stores, tenant: str):
    return create_memory(tenant_id=tenant, resource_id="user", thread_id="main",
                         embedder=create_hash_embedder(TEST_DIMENSIONS),
                         vector_store=stores.vector_store, working_store=stores.working_store)


def null_call(name: str, arguments: str, tenant: str | None) -> str:
    """``select * from fn(<tenant>, NULL, ...)`` with every other argument NULL and cast to its type."""
    types = [argument.strip() for argument in arguments.split(",")][1:]
    values = ["%s::text"] + [f"null::{kind}" for kind in types]
    return f"select * from prism_memory.{name}({', '.join(values)})"


def sqlstate_of(dsn: str, statement: str, tenant: str | None) -> str | None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            conn.execute(statement, (tenant,)).fetchall()
        except psycopg.Error as exc:
            return exc.sqlstate
    return None


@needs_bindings
def test_every_api_function_refuses_a_bound_role_any_other_tenant(pg_dsn, role):
    grant(pg_dsn, role, ["acme"])
    app = as_role(pg_dsn, role)
    for name, arguments in API_FUNCTIONS:
        if name == "install_info_v1":
            continue
        statement = null_call(name, arguments, None)
        for other in ("acme-corp", "acm", "ACME", "acme ", None):
            assert sqlstate_of(app, statement, other) == "PM016", (name, other)
        # Its own tenant gets past the check (to the function's own argument checks, or an answer).
        assert sqlstate_of(app, statement, "acme") != "PM016", name
    assert SQLSTATE_ERRORS["PM016"] is TenantAccessDeniedError


@needs_bindings
async def test_a_bound_role_reads_and_writes_its_tenant_only(pg_dsn, role):
    await seed(pg_dsn)
    grant(pg_dsn, role, ["acme"])
    stores = await create_postgres_memory_stores(as_role(pg_dsn, role), dimensions=TEST_DIMENSIONS, skip_migrations=True)
    try:
        acme, corp = memory_for(stores, "acme"), memory_for(stores, "acme-corp")
        assert sorted(hit.id for hit in (await acme.recall("secret", top_k=8)).hits) == sorted(TENANTS["acme"])
        assert (await acme.get_working()).data == {"owner": "acme"}
        await acme.remember([{"id": "acme-new", "text": "written through the bound role"}], wait=True)
        calls = [lambda: corp.recall("secret"), corp.get_working, lambda: corp.update_working({"owner": "mallory"}),
                 lambda: corp.export_memory(corp.config.scope), lambda: corp.forget(["corp-merger"]),
                 lambda: corp.set_consent("corp-merger", visible=False)]
        for call in calls:
            with pytest.raises(TenantAccessDeniedError):
                await call()
        with pytest.raises(TenantAccessDeniedError):
            await corp.remember([{"id": "corp-planted", "text": "planted"}], wait=True)
    finally:
        await stores.close()
    # Nothing of acme-corp changed.
    owner = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS)
    try:
        corp = memory_for(owner, "acme-corp")
        assert sorted(hit.id for hit in (await corp.recall("secret", top_k=8)).hits) == sorted(TENANTS["acme-corp"])
        assert (await corp.get_working()).data == {"owner": "acme-corp"}
    finally:
        await owner.close()


@needs_bindings
def test_a_bound_role_gets_the_servers_clock(pg_dsn, role):
    grant(pg_dsn, role, ["acme"])
    far_future = datetime(9999, 1, 1, tzinfo=timezone.utc)
    remember = ("select prism_memory.remember_v3('acme', 'user', 'main', array['dated'], array['a dated entry'], "
                "array[array_fill(1::real, array[%s])::vector], p_now => %s)")
    with psycopg.connect(as_role(pg_dsn, role), autocommit=True) as conn:
        conn.execute(remember, (TEST_DIMENSIONS, far_future))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        [(created_at,)] = conn.execute("select created_at from prism_memory.semantic_memory where id = 'dated'").fetchall()
        assert abs(created_at - datetime.now(timezone.utc)) < timedelta(minutes=5)
        # The trusted owner keeps its own clock (today's behaviour).
        conn.execute(remember.replace("'dated'", "'owner-dated'"), (TEST_DIMENSIONS, far_future))
        [(owner_stamp,)] = conn.execute(
            "select created_at from prism_memory.semantic_memory where id = 'owner-dated'").fetchall()
        assert owner_stamp == far_future


@needs_bindings
async def test_an_unbound_role_keeps_todays_access_and_bindings_can_be_listed_replaced_and_revoked(pg_dsn, role):
    await seed(pg_dsn)
    grant(pg_dsn, role, None)
    assert role_tenants(pg_dsn, role, TEST_CONFIG) == []
    app = as_role(pg_dsn, role)
    count = "select prism_memory.count_entries_v1(%s, 'user', 'main')"
    with psycopg.connect(app, autocommit=True) as conn:
        assert [conn.execute(count, (tenant,)).fetchone()[0] for tenant in TENANTS] == [2, 2]
    grant(pg_dsn, role, ["acme-corp", "acme-corp"])
    assert role_tenants(pg_dsn, role, TEST_CONFIG) == ["acme-corp"]
    assert sqlstate_of(app, count, "acme") == "PM016" and sqlstate_of(app, count, "acme-corp") is None
    grant(pg_dsn, role, None)  # without tenants: the bindings stay
    assert role_tenants(pg_dsn, role, TEST_CONFIG) == ["acme-corp"]
    revoke_app_role(pg_dsn, role, TEST_CONFIG)
    assert role_tenants(pg_dsn, role, TEST_CONFIG) == []
    assert sqlstate_of(app, count, "acme-corp") == "42501"  # insufficient_privilege: no EXECUTE any more
    with pytest.raises(InvalidScopeError):
        grant(pg_dsn, role, [])
    with pytest.raises(InvalidScopeError):
        grant(pg_dsn, role, ["  "])
    with pytest.raises(StoreError):
        grant(pg_dsn, "no_such_role_here", ["acme"])


@needs_bindings
def test_the_cli_grants_shows_and_revokes_a_bound_role(pg_dsn, role, capsys):
    common = ["--backend", "postgres", "--dsn", pg_dsn, "--dimensions", str(TEST_DIMENSIONS)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["role", "grant", role, "--bind-tenant", "acme", "--bind-tenant", "acme-eu", *common]) == 0
    assert f"role {role}: bound to tenants acme, acme-eu" in capsys.readouterr().out
    assert main(["role", "show", role, *common]) == 0
    assert f"role {role}: bound to tenants acme, acme-eu" in capsys.readouterr().out
    assert sqlstate_of(as_role(pg_dsn, role), "select prism_memory.count_entries_v1(%s, 'u', 't')", "acme-corp") == "PM016"
    assert main(["role", "revoke", role, *common]) == 0
    assert f"role {role}: no access" in capsys.readouterr().out
    assert role_tenants(pg_dsn, role, TEST_CONFIG) == []


@needs_bindings
def test_scope_is_not_a_tenant_binding(pg_dsn, role):
    """The binding is the role's, not a session setting: a bound role cannot widen it by SET."""
    grant(pg_dsn, role, ["acme"])
    with psycopg.connect(as_role(pg_dsn, role), autocommit=True) as conn:
        conn.execute("set prism_memory.tenant_id = 'acme-corp'")
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("select prism_memory.count_entries_v1('acme-corp', 'user', 'main')")
        assert raised.value.sqlstate == "PM016"


@needs_bindings
def test_a_member_of_a_bound_group_is_bound_whether_it_inherits_or_sets_the_role(pg_dsn, role):
    """A login role that gets EXECUTE through a bound group (inherited, or by SET ROLE) is held to the group's
    tenants; a rename keeps a binding (bindings are by role OID)."""
    group = f"{role}_group"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"create role {group} nologin")
        conn.execute(f"grant {group} to {role}")
    try:
        grant(pg_dsn, group, ["acme"])
        app = as_role(pg_dsn, role)
        count = "select prism_memory.count_entries_v1(%s, 'user', 'main')"
        assert sqlstate_of(app, count, "acme-corp") == "PM016" and sqlstate_of(app, count, "acme") is None
        with psycopg.connect(app, autocommit=True) as conn:
            conn.execute(f"set role {group}")
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(count, ("acme-corp",))
            assert raised.value.sqlstate == "PM016"
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"alter role {group} rename to {group}_renamed")
        assert sqlstate_of(app, count, "acme-corp") == "PM016"
        assert role_tenants(pg_dsn, f"{group}_renamed", TEST_CONFIG) == ["acme"]
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            renamed = conn.execute("select rolname from pg_roles where rolname like %s", (f"{group}%",)).fetchone()[0]
            conn.execute(f"drop owned by {renamed}")
            conn.execute(f"drop role {renamed}")


async def test_writes_need_read_committed_and_the_stores_always_use_it(pg_dsn):
    """Issue (review): under REPEATABLE READ a writer's snapshot predates the thread lock, so it could miss the
    tombstone or share grant committed before it. Writers refuse other levels (PM017, ConfigurationError); the
    stores set READ COMMITTED on their connections whatever the database default is."""
    from prism_memory import ConfigurationError

    remember = ("select prism_memory.remember_v3('acme', 'user', 'main', array['rr'], array['written in RR'], "
                "array[array_fill(1::real, array[%s])::vector])")
    with psycopg.connect(pg_dsn) as conn:
        conn.execute("set transaction isolation level repeatable read")
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(remember, (TEST_DIMENSIONS,))
        assert raised.value.sqlstate == "PM017" and SQLSTATE_ERRORS["PM017"] is ConfigurationError
    database = urlparse(pg_dsn).path.lstrip("/")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"alter database \"{database}\" set default_transaction_isolation = 'repeatable read'")
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    try:
        memory = memory_for(stores, "acme")
        await memory.remember([{"id": "under-rr-default", "text": "written on a read committed connection"}], wait=True)
        assert [hit.id for hit in (await memory.recall("read committed connection")).hits] == ["under-rr-default"]
    finally:
        await stores.close()
