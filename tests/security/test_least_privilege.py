"""Least privilege in the database: an application role that can only EXECUTE the API functions."""

import secrets

import psycopg
import pytest
from prism_memory import (
    MemoryConsent,
    RagAccessConstraint,
    RagChunk,
    create_hash_embedder,
    create_memory,
    create_postgres_memory_stores,
)
from prism_memory.schema import API_FUNCTIONS, grant_app_role

from conftest import CITUS, TEST_CONFIG
from roles import as_role

TABLES = ["semantic_memory", "semantic_memory_working", "semantic_memory_invalidation", "semantic_memory_share_grant",
          "semantic_memory_rag_chunk", "semantic_memory_rag_source_acl", "semantic_memory_rag_source_version",
          "semantic_memory_rag_scope_generations", "semantic_memory_tenant_binding"]


@pytest.fixture
def app_dsn(pg_dsn):
    """A login role granted with grant_app_role, and its URL; dropped afterwards."""
    role = f"app_{secrets.token_hex(4)}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"create role {role} login")
    with pytest.warns(UserWarning, match="superuser"):  # the test install is owned by postgres
        grant_app_role(pg_dsn, role, TEST_CONFIG)
    yield as_role(pg_dsn, role)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"drop owned by {role}")
        conn.execute(f"drop role {role}")


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("statement", ["select * from {}", "update {} set tenant_id = 'x'", "delete from {}",
                                       "insert into {} (tenant_id) values ('x')"])
def test_the_app_role_cannot_touch_a_table(app_dsn, table, statement):
    refused = psycopg.errors.InsufficientPrivilege
    if CITUS and statement.startswith("update") and table != "semantic_memory_tenant_binding":
        # Citus's planner refuses to change a distribution column before the executor checks privileges.
        refused = psycopg.errors.FeatureNotSupported
    with psycopg.connect(app_dsn, autocommit=True) as conn, pytest.raises(refused):
        conn.execute(statement.format(f"prism_memory.{table}"))


@pytest.mark.parametrize("call", [
    "select prism_memory.lock_thread_v1('t', 'r', 'th')",
    "select prism_memory.lexical_terms_v1('x')",
    "select prism_memory.tombstone_from_sources_v1('t', 'r', 'th', array['a'], now())",
    "select prism_memory.rag_estimate_candidates_v1('t', 's', 0, '{}'::jsonb)",
])
def test_the_app_role_cannot_call_internal_functions(app_dsn, call):
    with psycopg.connect(app_dsn, autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(call)


def test_every_api_function_runs_as_its_owner_and_every_late_parsed_function_pins_its_search_path(pg_dsn):
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            "select p.proname, p.prosecdef, p.proconfig, has_function_privilege('public', p.oid, 'execute'), "
            "l.lanname = 'plpgsql' or p.prosqlbody is null "
            "from pg_proc p join pg_language l on l.oid = p.prolang "
            "where p.pronamespace = 'prism_memory'::regnamespace").fetchall()
    api = {name for name, _ in API_FUNCTIONS}
    assert api <= {row[0] for row in rows}
    for name, definer, config, public, parsed_when_run in rows:
        assert definer == (name in api and name != "install_info_v1"), name
        assert public == (name == "install_info_v1"), f"PUBLIC may execute {name}"
        if parsed_when_run:
            [path] = [item for item in config or [] if item.startswith("search_path=")]
            assert path.startswith("search_path=pg_catalog, ") and path.endswith(", pg_temp"), (name, path)


@pytest.mark.parametrize("role", ["public", "PUBLIC", "pg_read_all_data", 'bad"name', "x; drop table y"])
def test_grant_app_role_refuses_public_predefined_and_malformed_roles(pg_dsn, role):
    from prism_memory import InvalidIdentifierError

    with pytest.raises(InvalidIdentifierError):
        grant_app_role(pg_dsn, role, TEST_CONFIG)


def test_temporary_objects_of_the_caller_cannot_hijack_a_function(app_dsn):
    """A caller's pg_temp types and functions come last in every pinned search_path, never first:
    none of them may run inside an API function (where it would run as the owner)."""
    notices = []
    with psycopg.connect(app_dsn, autocommit=True) as conn:
        conn.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary))
        conn.execute("""create function pg_temp.evil(t pg_catalog.text) returns boolean language plpgsql as
                        $$begin raise notice 'hijacked as %', current_user; return true; end$$""")
        conn.execute("create domain pg_temp.text as pg_catalog.text check (pg_temp.evil(value))")
        conn.execute("create function pg_temp.octet_length(t pg_catalog.text) returns integer language sql "
                     "as 'select pg_temp.evil(t)::integer'")
        vector = "array_fill(1, array[64])::vector"
        calls = [f"select count(*) from prism_memory.rag_query_v1('t', 'kb', {vector}, 5, %s::jsonb)",
                 "select count(*) from prism_memory.rag_lexical_query_v1('t', 'kb', 'x', 5, %s::jsonb)",
                 f"select count(*) from prism_memory.recall_v3('t', 'r', 'th', {vector}, %s)"]
        for call in calls:
            assert conn.execute(call, ('{"a": 1}',)).fetchone() == (0,)
    assert not [notice for notice in notices if "hijacked" in notice]


async def test_the_whole_api_works_through_the_app_role(app_dsn):
    stores = await create_postgres_memory_stores(app_dsn, dimensions=64, skip_migrations=True)
    try:
        memory = create_memory(tenant_id="t1", resource_id="user-ada", thread_id="thread-1", embedder=create_hash_embedder(64),
                               vector_store=stores.vector_store, working_store=stores.working_store)
        await memory.update_working({"name": "Ada"})
        await memory.remember([{"id": "a", "text": "likes tea", "consent": MemoryConsent()},
                               {"id": "b", "text": "likes coffee", "consent": MemoryConsent()}], wait=True)
        await memory.set_consent("b", visible=False)
        assert [hit.id for hit in (await memory.recall("likes")).hits] == ["a"]
        assert await memory.forget(["b"]) == 1
        assert [record.id for record in (await memory.export_memory(memory.config.scope)).entries] == ["a"]
        store = stores.vector_store
        [vector] = await create_hash_embedder(64).embed(["handbook"])
        await store.upsert("t1", "kb", [RagChunk("c", "doc", "handbook", vector)])
        await store.set_source_access("t1", "doc", principal_ids=["ada"], access_version=1)
        assert [m.id for m in await store.query("t1", "kb", vector, authorization=RagAccessConstraint("ada"))] == ["c"]
        assert (await memory.get_working()).data == {"name": "Ada"}
    finally:
        await stores.close()


async def test_no_argument_steers_a_function_into_another_tenants_rows(pg_dsn, app_dsn):
    """Tenant 'victim' holds data; every API function called as tenant 'attacker' with the victim's resource,
    thread, entry, scope and source ids must neither return nor change any of it."""
    embedder = create_hash_embedder(64)
    admin = await create_postgres_memory_stores(pg_dsn, dimensions=64, skip_migrations=True)
    try:
        victim = create_memory(tenant_id="victim", resource_id="user-ada", thread_id="thread-1", embedder=embedder,
                               vector_store=admin.vector_store, working_store=admin.working_store)
        await victim.update_working({"secret": "canary-working"})
        await victim.remember([{"id": "e1", "text": "canary entry one", "consent": MemoryConsent()},
                               {"id": "e2", "text": "canary entry two", "consent": MemoryConsent(),
                                "lineage": {"source_ids": ["e1"]}}], wait=True)
        await victim.share_with("child", ["e1"])
        [vector] = await embedder.embed(["canary chunk"])
        await admin.vector_store.upsert("victim", "kb", [RagChunk("c1", "doc", "canary chunk", vector)])
        await admin.vector_store.set_source_access("victim", "doc", principal_ids=["ada"], access_version=3)
    finally:
        await admin.close()

    def snapshot():
        with psycopg.connect(pg_dsn) as conn:
            return {table: sorted(conn.execute(f"select * from prism_memory.{table} where tenant_id = 'victim'").fetchall(),
                                  key=repr) for table in TABLES}

    before = snapshot()
    stores = await create_postgres_memory_stores(app_dsn, dimensions=64, skip_migrations=True)
    outputs = []
    try:
        attacker = create_memory(tenant_id="attacker", resource_id="user-ada", thread_id="thread-1", embedder=embedder,
                                 vector_store=stores.vector_store, working_store=stores.working_store)
        child = create_memory(tenant_id="attacker", resource_id="user-ada", thread_id="child", embedder=embedder,
                              vector_store=stores.vector_store, working_store=stores.working_store)
        store = stores.vector_store
        outputs += [await attacker.get_working(), await attacker.recall("canary entry", top_k=32, message_range=4),
                    await child.recall("canary", top_k=32, share_from_parent_thread_id="thread-1"),
                    await attacker.export_memory(attacker.config.scope), await attacker.forget(["e1", "e2"]),
                    await attacker.apply_retention(max_entries=0), await attacker.rebuild_index(),
                    await store.query("attacker", "kb", vector, top_k=32),
                    await store.lexical_query("attacker", "kb", "canary chunk"),
                    await store.get_by_source("attacker", "kb", "doc"),
                    await store.check_source_access("attacker", "doc", RagAccessConstraint("ada")),
                    await store.delete("attacker", "kb", source_id="doc"),
                    await store.set_source_access("attacker", "doc", principal_ids=["mallory"], access_version=0),
                    await store.get_current_generation("attacker", "kb")]
        for call in (attacker.set_consent("e1", visible=True), attacker.correct("e1", "overwritten")):
            try:
                outputs.append(await call)
            except Exception as exc:
                outputs.append(type(exc).__name__)
        await attacker.update_working({"secret": "attacker"})
        await attacker.remember([{"id": "e1", "text": "attacker's own e1"}], wait=True)
    finally:
        await stores.close()
    assert snapshot() == before
    assert "canary" not in repr(outputs)


async def test_row_level_security_keeps_a_directly_granted_role_to_its_tenant(pg_dsn):
    """The second line of defence: a role someone grants SELECT on a table sees one tenant's rows, by setting."""
    embedder = create_hash_embedder(64)
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=64, skip_migrations=True)
    try:
        for tenant in ("t1", "t2"):
            memory = create_memory(tenant_id=tenant, resource_id="r", thread_id="th", embedder=embedder,
                                   vector_store=stores.vector_store, working_store=stores.working_store)
            await memory.remember([{"id": f"{tenant}-a", "text": "row"}], wait=True)
    finally:
        await stores.close()
    role = f"report_{secrets.token_hex(4)}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"create role {role} login")
        conn.execute(f"grant usage on schema prism_memory to {role}")
        conn.execute(f"grant select, update, delete on prism_memory.semantic_memory to {role}")
    try:
        with psycopg.connect(as_role(pg_dsn, role), autocommit=True) as conn:
            query = "select id from prism_memory.semantic_memory order by id"
            assert conn.execute(query).fetchall() == []  # no tenant set: nothing
            conn.execute("set prism_memory.tenant_id = 't1'")
            if CITUS:
                # Citus: the shards are read on the workers, where a session's SET does not reach (the policy
                # fails closed there); a SET LOCAL does, with citus.propagate_set_commands = 'local'.
                assert conn.execute(query).fetchall() == []
                conn.execute("set citus.propagate_set_commands = 'local'")
                conn.execute("begin")
                conn.execute("set local prism_memory.tenant_id = 't1'")
            assert conn.execute(query).fetchall() == [("t1-a",)]
            assert conn.execute("delete from prism_memory.semantic_memory where id = 't2-a'").rowcount == 0
            if CITUS:
                conn.execute("commit")
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            assert conn.execute("select count(*) from prism_memory.semantic_memory").fetchone() == (2,)
            conn.execute(f"drop owned by {role}")
            conn.execute(f"drop role {role}")


async def test_the_app_role_gets_typed_errors_for_migrating_and_a_missing_role(app_dsn, pg_dsn):
    from prism_memory import StoreError

    with pytest.raises(StoreError, match="skip_migrations"):
        await create_postgres_memory_stores(app_dsn, dimensions=64)
    with pytest.warns(UserWarning, match="superuser"), pytest.raises(StoreError):
        grant_app_role(pg_dsn, "no_such_role", TEST_CONFIG)
