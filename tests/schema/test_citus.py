"""Distribution over Citus (prism_memory.citus, docs/scaling.md).

On plain PostgreSQL: distribute() and ``prism-memory distribute`` refuse a
database without the citus extension, and the bodies take their plain paths.
On the Citus lane (``PRISM_TEST_CITUS_URL``; ``pg_dsn`` is then the shared
distributed install): the install is distributed, colocated and delegated,
every function is the same on every node, the chain of migrations keeps it
so, each API call runs as one single-shard statement on the coordinator and
no statement anywhere touches more than one shard, and neither a NULL tenant
from a role without the grant nor a tenant binding can be used against it.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg
import pytest
from prism_memory import ConfigurationError
from prism_memory.citus import (
    DISTRIBUTED_TABLES,
    FIRST_REVISION,
    REFERENCE_TABLES,
    GUARD_MARKER,
    UNDELEGATED_FUNCTIONS,
    caches_local_plans,
    delegated_schema,
    distribute,
    plan_cache_mode,
)
from prism_memory.cli import main as cli_main
from prism_memory.operations import API_FUNCTIONS
from prism_memory.schema import REVISIONS, SchemaConfig, downgrade, grant_app_role, migrate

from conftest import CITUS, TEST_CONFIG, TEST_DIMENSIONS, citus_placement

citus_only = pytest.mark.skipif(not CITUS, reason="needs a Citus coordinator: set PRISM_TEST_CITUS_URL (the Citus lane)")
plain_only = pytest.mark.skipif(CITUS, reason="the plain-PostgreSQL side of distribution; the Citus lane checks the other")

NAMES = TEST_CONFIG.names
COPIES = delegated_schema(TEST_CONFIG)
VECTOR = "[" + ",".join(["0.125"] * TEST_DIMENSIONS) + "]"
#: One call of every API function but install_info_v1, for tenant %(t)s (named arguments, defaults elsewhere).
API_CALLS: dict[str, str] = {
    "update_working_v1": "update_working_v1(%(t)s, 'res-c', 'th-c', '{\"a\": 1}')",
    "get_working_v1": "get_working_v1(%(t)s, 'res-c', 'th-c')",
    "remember_v2": "remember_v2(%(t)s, 'res-c', 'th-c', array['c1', 'c2', 'c3'], "
                   "array['alpha beta', 'gamma delta', 'alpha derived'], array[%(v)s, %(v)s, %(v)s]::vector[], "
                   "array['{}', '{}', '{\"_lineage\": {\"sourceIds\": [\"c1\"]}}']::jsonb[], "
                   "p_ttl => array[null, null, '1 day']::interval[])",
    "remember_batch_v2": "remember_batch_v2(%(t)s, array['res-c'], array['th-f'], array['f1'], array['theta'], "
                         "array[%(v)s]::vector[], p_expires_at => array['9999-01-01Z']::timestamptz[])",
    "remember_v3": "remember_v3(%(t)s, 'res-c', 'th-g', array['g1'], array['iota'], array[%(v)s]::vector[], "
                   "p_occurred_at => array['2020-05-01Z']::timestamptz[])",
    "remember_batch_v3": "remember_batch_v3(%(t)s, array['res-c'], array['th-g'], array['g2'], array['kappa'], "
                         "array[%(v)s]::vector[], p_occurred_at => array['2021-05-01Z']::timestamptz[])",
    "set_retention_policy_v1": "set_retention_policy_v1(%(t)s, 'res-c', 'th-e', 30)",
    "get_retention_policy_v1": "get_retention_policy_v1(%(t)s, 'res-c', 'th-e')",
    "recall_v3": "recall_v3(%(t)s, 'res-c', 'th-c', %(v)s::vector, 'alpha', p_message_range => 1, "
                 "p_across_threads => true, p_recency_weight => 0.2, p_half_life_ms => 1000, p_explain => true)",
    "recall_v4": "recall_v4(%(t)s, 'res-c', 'th-c', %(v)s::vector, 'alpha', p_message_range => 1, "
                 "p_across_threads => true, p_explain => true, p_created_after => '2000-01-01Z', "
                 "p_lexical_weight => 0.5)",
    "share_with_v1": "share_with_v1(%(t)s, 'res-c', 'th-c', 'res-c', 'th-child', array['c1'])",
    "set_consent_v1": "set_consent_v1(%(t)s, 'res-c', 'th-c', 'c2', p_visible => true, p_source => 'user', "
                      "p_scope => 'thread')",
    "set_consent_v2": "set_consent_v2(%(t)s, 'res-c', 'th-g', 'g1', p_visible => true)",
    "correct_v2": "correct_v2(%(t)s, 'res-c', 'th-c', 'c2', 'gamma corrected', %(v)s::vector)",
    "correct_v3": "correct_v3(%(t)s, 'res-c', 'th-g', 'g2', 'kappa corrected', %(v)s::vector)",
    "list_entries_v2": "list_entries_v2(%(t)s, 'res-c', 'th-c', p_exportable => true)",
    "list_entries_v3": "list_entries_v3(%(t)s, 'res-c', 'th-g', p_occurred_before => '2021-01-01Z')",
    "count_entries_v1": "count_entries_v1(%(t)s, 'res-c', 'th-c')",
    "list_resource_entries_v1": "list_resource_entries_v1(%(t)s, 'res-c', 'th-c', 1, 'c1')",
    "list_resource_entries_v2": "list_resource_entries_v2(%(t)s, 'res-c', p_occurred_after => '2021-01-01Z')",
    "count_resource_entries_v1": "count_resource_entries_v1(%(t)s, 'res-c')",
    "reembed_v1": "reembed_v1(%(t)s, 'res-c', 'th-c', array['c1'], array['alpha beta'], array[%(v)s]::vector[])",
    "use_embedding_model_v1": "use_embedding_model_v1(%(t)s, array['res-c'], array['th-c'], 'model-c', "
                              f"{TEST_DIMENSIONS})",
    "invalidate_v1": "invalidate_v1(%(t)s, 'res-c', 'th-c', array['c1'], 'deleted')",
    "retention_candidates_v2": "retention_candidates_v2(%(t)s, 'res-c', 'th-c', null, 1, 8)",
    "erase_walk_v1": "erase_walk_v1(%(t)s, 'res-c', 'th-c', array['c1'], 'deleted')",
    "purge_v1": "purge_v1(%(t)s, 'res-c', 'th-c', array['c1'])",
    "purge_v2": "purge_v2(%(t)s, 'res-c', 'th-c', array['c1'])",
    "invalidate_resource_v1": "invalidate_resource_v1(%(t)s, 'res-c', p_limit => 2)",  # c2, c3: c1 is gone
    "purge_resource_v1": "purge_resource_v1(%(t)s, 'res-c', array['th-c', 'th-c'], array['c2', 'c3'])",
    "rag_upsert_v1": "rag_upsert_v1(%(t)s, 'docs', array['k1', 'k2'], array['s1', 's1'], array['alpha chunk', 'beta chunk'], "
                     "array[%(v)s, %(v)s]::vector[], array['{\"lang\": \"en\"}', '{}']::jsonb[], array[1, 1]::bigint[])",
    "rag_set_source_access_v1": "rag_set_source_access_v1(%(t)s, 's1', array['p1'], array['g1'], 1)",
    "rag_check_source_access_v1": "rag_check_source_access_v1(%(t)s, 's1', 'p1')",
    "rag_query_v1": "rag_query_v1(%(t)s, 'docs', %(v)s::vector, 3, '{\"lang\": \"en\"}', true, 'p1')",
    "rag_lexical_query_v1": "rag_lexical_query_v1(%(t)s, 'docs', 'alpha', 3)",
    "rag_get_by_source_v1": "rag_get_by_source_v1(%(t)s, 'docs', 's1')",
    "rag_get_generation_v1": "rag_get_generation_v1(%(t)s, 'docs')",
    "rag_set_generation_v1": "rag_set_generation_v1(%(t)s, 'docs', 2)",
    "rag_delete_v1": "rag_delete_v1(%(t)s, 'docs', p_source_id => 's1', p_generation => 0)",
}


@pytest.fixture
def login_role(pg_dsn):
    """A fresh login role with nothing granted (its name); dropped with what it owns afterwards."""
    role = f"role_{secrets.token_hex(3)}"
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"create role {role} login")
    yield role
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"drop owned by {role}")
        admin.execute(f"drop role {role}")


def test_the_scaling_doc_lists_every_distributed_table():
    """docs/scaling.md lists, between its distributed-tables markers, the tables distribute() distributes (the
    default install's names), in its order."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "scaling.md").read_text()
    listed = text.split("<!-- distributed-tables -->")[1].split("<!-- /distributed-tables -->")[0]
    names = SchemaConfig().names
    assert re.findall(r"^\s*- `(\w+)`", listed, re.M) == [names[key].split(".")[-1].strip('"') for key in DISTRIBUTED_TABLES]


def test_every_api_function_has_a_call_here():
    assert set(API_CALLS) == {name for name, _ in API_FUNCTIONS} - UNDELEGATED_FUNCTIONS


def run_api_calls(dsn: str, tenant: str) -> dict[str, list[tuple]]:
    """Each of API_CALLS once for ``tenant``, in order, autocommit, shaped for delegation; rows per function."""
    results = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name, call in API_CALLS.items():
            results[name] = conn.execute(f"select * from prism_memory.{call}", {"t": tenant, "v": VECTOR}).fetchall()
    return results


@plain_only
def test_distribute_refuses_a_database_without_citus(pg_dsn):
    with pytest.raises(ConfigurationError, match="no citus extension"):
        distribute(pg_dsn, TEST_CONFIG)
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("select prism_memory.citus_installed_v1()").fetchone()[0] is False


@plain_only
def test_the_cli_refuses_to_distribute_without_a_dsn_or_citus(pg_dsn, capsys):
    assert cli_main(["distribute"]) == 2
    assert "needs --dsn" in capsys.readouterr().err
    assert cli_main(["distribute", "--dsn", pg_dsn, "--dimensions", str(TEST_DIMENSIONS)]) != 0
    assert "no citus extension" in capsys.readouterr().err


@plain_only
def test_the_plan_cache_probe_answers_no_where_it_cannot_run(pg_dsn):
    """Without Citus the probe cannot run (no run_command_on_all_nodes): the safe answer, planned per call, and
    the connection still serves."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert caches_local_plans(conn, NAMES["entries"]) is False
        assert conn.execute("select 1").fetchone() == (1,)


@plain_only
def test_every_api_call_answers_on_plain_postgres(pg_dsn):
    """The same calls the Citus lane makes single-shard: each answers here (no Citus-only path is taken)."""
    results = run_api_calls(pg_dsn, "acme")
    assert [row[4] for row in results["recall_v3"] if row[0] == "hit"] == ["c1", "c3", "c2"]  # 'alpha' ties broken by sequence


#: Each function of schema %s: its name, then distribution argument, force_delegation, colocation, plan mode and
#: whether it is a guard, ``-`` for none (run on the coordinator).
FUNCTIONS_SQL = (
    "select p.proname, coalesce(o.distribution_argument_index::text, '-') || ':' "
    "|| coalesce(o.force_delegation::text, '-') || ':' || coalesce(o.colocationid::text, '-') || ':' "
    "|| coalesce((select c from unnest(p.proconfig) as c where c like 'plan_cache_mode=%%'), '-') || ':' "
    "|| (strpos(p.prosrc, %s) > 0)::text "
    "from pg_proc p left join pg_dist_object o on o.classid = 'pg_proc'::regclass and o.objid = p.oid "
    "where p.pronamespace = to_regnamespace(%s)"
)


def catalog_state(dsn: str) -> dict:
    """What Citus knows of the install: tables, colocation, delegation (the install's functions and their
    delegated copies), and each node's function definitions of both schemas."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        tables = {key: conn.execute(
            "select partmethod::text || ':' || coalesce(column_to_column_name(logicalrelid, partkey), '') || ':' "
            "|| colocationid from pg_dist_partition where logicalrelid = to_regclass(%s)", (NAMES[key],)).fetchone()
            for key in DISTRIBUTED_TABLES + REFERENCE_TABLES}
        functions = dict(conn.execute(FUNCTIONS_SQL, (GUARD_MARKER, TEST_CONFIG.schema)).fetchall())
        copies = dict(conn.execute(FUNCTIONS_SQL, (GUARD_MARKER, COPIES)).fetchall())
        definitions = conn.execute(
            "select result from run_command_on_all_nodes($$select md5(string_agg(p.oid::regprocedure::text "
            "|| pg_get_functiondef(p.oid) || coalesce(p.proacl::text, 'default'), ',' order by p.oid::regprocedure::text)) "
            "from pg_proc p where p.pronamespace in ('prism_memory'::regnamespace, 'prism_memory_delegated'::regnamespace)$$)"
        ).fetchall()
        mode = plan_cache_mode(conn, NAMES["entries"])
    return {"tables": tables, "functions": functions, "copies": copies, "definitions": {row[0] for row in definitions},
            "plan_cache_mode": mode}


def assert_distributed_and_delegated(state: dict) -> None:
    colocation = state["tables"]["entries"][0].split(":")[2]
    for key in DISTRIBUTED_TABLES:
        assert state["tables"][key] == (f"h:tenant_id:{colocation}",), key
    for key in REFERENCE_TABLES:
        assert state["tables"][key][0].startswith("n:"), key
    api = {name for name, _ in API_FUNCTIONS} - UNDELEGATED_FUNCTIONS
    for name, delegation in state["functions"].items():  # on every node, none delegated; each API one a guard
        assert delegation == f"-:-:-:-:{str(name in api).lower()}", name
    # Each API function's copy delegated, in distribute()'s plan mode on every node (pg_get_functiondef below
    # shows the SET); beside them only the guards' readers of vectors from text, not delegated.
    copies = {name: delegation for name, delegation in state["copies"].items() if not name.startswith("from_text_")}
    assert copies == {name: f"0:true:{colocation}:plan_cache_mode={state['plan_cache_mode']}:false" for name in api}
    assert {state["copies"][name] for name in state["copies"].keys() - copies.keys()} == {"-:-:-:-:false"}
    assert len(state["definitions"]) == 1  # every node holds the coordinator's definitions and grants


@citus_only
def test_the_install_is_distributed_colocated_and_delegated(pg_dsn):
    """Every API function delegated, in the plan mode the cluster's Citus build calls for: auto where it reuses
    the local plans it caches, else planned per call (test_repeated_calls_keep_a_session_s_memory_flat measures
    that the mode chosen leaks nothing)."""
    state = catalog_state(pg_dsn)
    assert_distributed_and_delegated(state)
    again = distribute(pg_dsn, TEST_CONFIG)
    assert again.tables_distributed == ()  # idempotent
    assert again.plan_cache_mode == state["plan_cache_mode"]


@citus_only
def test_a_migration_delegates_again_what_it_re_creates(pg_dsn):
    """A revision that drops and re-creates an API function puts its body back in place of its guard, neither
    guarded nor delegated; migrate() puts it behind its guard again. The newest revision is undone and run again
    (a replay over its own objects would find them there)."""
    signature = "prism_memory.count_entries_v1(text, text, text)"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        definition = conn.execute("select pg_get_functiondef(%s::regprocedure)", (f"{COPIES}.count_entries_v1(text, text, text)",)).fetchone()[0]
        conn.execute(f"drop function {signature}")
        conn.execute(definition.replace(f"FUNCTION {COPIES}.", "FUNCTION prism_memory.", 1))
    assert catalog_state(pg_dsn)["functions"]["count_entries_v1"].startswith("-:-:-:plan_cache_mode")  # propagated only
    downgrade(pg_dsn, TEST_CONFIG, REVISIONS[-2])
    migrate(pg_dsn, TEST_CONFIG)  # runs the newest revision again, then distributes again
    assert_distributed_and_delegated(catalog_state(pg_dsn))
    with psycopg.connect(pg_dsn) as conn:  # the revision's grants hold again: no EXECUTE for PUBLIC
        assert conn.execute("select has_function_privilege('public', %s, 'execute')", (signature,)).fetchone()[0] is False


@citus_only
@pytest.mark.parametrize("target", [f"{FIRST_REVISION - 1:04d}", "base", f"-{len(REVISIONS) - FIRST_REVISION + 1}"])
def test_a_distributed_install_refuses_to_go_below_the_first_citus_revision(pg_dsn, target):
    with pytest.raises(ConfigurationError, match="cannot be downgraded"):
        downgrade(pg_dsn, TEST_CONFIG, target)
    assert_distributed_and_delegated(catalog_state(pg_dsn))
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("select version_num from prism_memory.alembic_version").fetchone()[0] == REVISIONS[-1]


def counters(conn) -> list[tuple[int, int]]:
    """(single-shard, multi-shard) executions on each node for this database, coordinator first."""
    return [tuple(int(n) for n in row[0].split(","))
            for row in conn.execute(
                "select result from run_command_on_all_nodes($$select query_execution_single_shard || ',' || "
                "query_execution_multi_shard from citus_stat_counters where name = current_database()$$) "
                "order by nodeid").fetchall()]


def session_bytes(conn) -> int:
    """The bytes held by every memory context of ``conn``'s backend."""
    return conn.execute("select sum(total_bytes)::bigint from pg_catalog.pg_backend_memory_contexts").fetchone()[0]


def test_repeated_calls_keep_a_session_s_memory_flat(pg_dsn):
    """A pooled connection makes the same calls for hours: 150 more rounds of writes and reads leave its backend
    holding no more memory than before (under 2 MB more). On the Citus lane the calls go straight to the worker
    that holds the tenant, in one backend, in distribute()'s plan mode: where Citus 14.0.1 keeps a new plan per
    execution of each cached single-shard statement (about 27 kB each: 17 MB here), every statement planned per
    call; where it reuses them (citusdata/citus#8824), auto, its cached plans reused."""
    tenant = "acme-memory"
    dsn = citus_placement(pg_dsn, NAMES["entries"], tenant)[0] if CITUS else pg_dsn
    with psycopg.connect(dsn, autocommit=True) as conn:

        def round_of_calls(n: int) -> None:
            arguments = {"t": tenant, "v": VECTOR, "id": f"m{n}"}
            conn.execute("select * from prism_memory.update_working_v1(%(t)s, 'res-m', 'th-m', '{\"n\": 1}')", arguments)
            conn.execute("select * from prism_memory.remember_v2(%(t)s, 'res-m', 'th-m', array[%(id)s], array['alpha m'], "
                         "array[%(v)s]::vector[])", arguments)
            conn.execute("select * from prism_memory.recall_v3(%(t)s, 'res-m', 'th-m', %(v)s::vector, 'alpha')", arguments)
            conn.execute("select * from prism_memory.get_working_v1(%(t)s, 'res-m', 'th-m')", arguments)

        for n in range(20):  # the plan caches and the first pages of every context, filled
            round_of_calls(n)
        before = session_bytes(conn)
        for n in range(20, 170):
            round_of_calls(n)
        grown = session_bytes(conn) - before
    assert grown < 2 * 1024 * 1024, f"the session grew by {grown:,} bytes over 150 rounds"


@citus_only
def test_each_api_call_runs_as_one_single_shard_statement(pg_dsn):
    dbname = urlparse(pg_dsn).path.lstrip("/")
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        # No parameters: psycopg sends these strings as they are, so format()'s placeholders take one %.
        admin.execute("select run_command_on_all_nodes(format('alter database %I set citus.enable_stat_counters = on', "
                      "current_database()))")
        try:
            admin.execute("select citus_stat_counters_reset(oid) from pg_database where datname = %s", (dbname,))
            admin.execute("select run_command_on_workers(format('select citus_stat_counters_reset(%s)', "
                          "(select oid from pg_database where datname = current_database())))")
            before = counters(admin)
            for tenant in ("acme", "acme-corp"):
                run_api_calls(pg_dsn, tenant)
            after = counters(admin)
        finally:
            admin.execute("select run_command_on_all_nodes(format('alter database %I reset citus.enable_stat_counters', "
                          "current_database()))")
    coordinator = (after[0][0] - before[0][0], after[0][1] - before[0][1])
    # Each call: one single-shard task on the coordinator (the delegated call), none multi-shard.
    assert coordinator == (2 * len(API_CALLS), 0)
    assert [a[1] - b[1] for a, b in zip(after, before)] == [0] * len(after)  # no multi-shard statement anywhere


def as_role(dsn: str, role: str) -> str:
    """``dsn`` with ``role`` as its user (no password: the lane's nodes trust 127.0.0.1)."""
    parsed = urlparse(dsn)
    return urlunparse(parsed._replace(netloc=f"{role}@{parsed.hostname}:{parsed.port}"))


#: Ways a caller can hand an API function a NULL tenant, or wrap a call: each crashed the coordinator (a
#: segfault in Citus's delegation planner, which resets every session) while the API functions themselves were
#: delegated, from any role with USAGE on the schema. ``{f}`` is the function, ``{rest}`` its other arguments.
PROBES: dict[str, str] = {
    "literal": "select * from prism_memory.{f}(null, {rest})",
    "nullif": "select * from prism_memory.{f}(nullif('acme', 'acme'), {rest})",
    "bound parameter": "select * from prism_memory.{f}(%(t)s, {rest})",
    "typed bound parameter": "select * from prism_memory.{f}(%(t)s::text, {rest})",
    "prepared statement": "select * from prism_memory.{f}(%(t)s, {rest})",
    "subquery argument": "select * from prism_memory.{f}((select null::text), {rest})",
    "select list": "select prism_memory.{f}(null, {rest})",
    "subquery in FROM": "select * from (select * from prism_memory.{f}(null, {rest})) x",
    "inlined CTE": "with x as (select * from prism_memory.{f}(null, {rest})) select * from x",
    "subquery in FROM, a tenant": "select * from (select * from prism_memory.{f}('acme', {rest})) x",
    "inlined CTE, a tenant": "with x as (select * from prism_memory.{f}('acme', {rest})) select * from x",
}
PROBED_FUNCTIONS: dict[str, str] = {
    "count_entries_v1": "'res-p', 'th-p'",
    "update_working_v1": "'res-p', 'th-p', '{\"a\": 1}'",
}


@citus_only
@pytest.mark.parametrize("function", PROBED_FUNCTIONS)
@pytest.mark.parametrize("probe", PROBES)
def test_no_call_shape_and_no_null_tenant_crashes_the_coordinator(pg_dsn, login_role, probe, function):
    """Each API function is a guard that is not delegated (it refuses a NULL tenant with PM001, then calls its
    delegated copy, which no caller can name): a granted role's call, in any shape, leaves every other session
    of the coordinator running."""
    with pytest.warns(UserWarning, match="superuser"):
        grant_app_role(pg_dsn, login_role, TEST_CONFIG)
    query = PROBES[probe].format(f=function, rest=PROBED_FUNCTIONS[function])
    with psycopg.connect(pg_dsn, autocommit=True) as bystander, \
            psycopg.connect(as_role(pg_dsn, login_role), autocommit=True) as conn:
        if probe.endswith("a tenant"):
            assert conn.execute(query).fetchall()
        else:
            if probe == "prepared statement":  # a generic plan after five executions with a tenant
                for _ in range(6):
                    conn.execute(query, {"t": "acme"}, prepare=True)
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(query, {"t": None}, prepare=probe == "prepared statement")
            assert raised.value.sqlstate == "PM001", raised.value
        assert bystander.execute("select 1").fetchone() == (1,)  # a crash ends every session of the node
        assert conn.execute("select prism_memory.install_info_v1() is not null").fetchone() == (True,)


@citus_only
def test_the_delegated_copies_cannot_be_named_by_a_granted_role(pg_dsn, login_role):
    """A delegated copy is the call Citus crashes on; the granted role has no USAGE on their schema, so its call
    is refused while it is parsed, before Citus plans it."""
    with pytest.warns(UserWarning, match="superuser"):
        grant_app_role(pg_dsn, login_role, TEST_CONFIG)
    with psycopg.connect(pg_dsn, autocommit=True) as bystander, \
            psycopg.connect(as_role(pg_dsn, login_role), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="schema"):
            conn.execute(f"select * from {COPIES}.count_entries_v1(null, 'res', 'th')")
        assert bystander.execute("select 1").fetchone() == (1,)


@citus_only
def test_a_role_without_the_grant_cannot_reach_the_functions_with_a_null_tenant(pg_dsn, login_role):
    """A role without USAGE on the schema is stopped while the call is parsed."""
    with psycopg.connect(pg_dsn, autocommit=True) as bystander, \
            psycopg.connect(as_role(pg_dsn, login_role), autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select * from prism_memory.get_working_v1(null, 'res', 'th')")
        assert bystander.execute("select 1").fetchone() == (1,)


@citus_only
def test_a_tenant_binding_is_refused_on_a_distributed_install(pg_dsn, login_role):
    with pytest.raises(ConfigurationError, match="not supported on a Citus"):
        grant_app_role(pg_dsn, login_role, TEST_CONFIG, tenants=["acme"])
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        assert admin.execute(f"select count(*) from {NAMES['tenant_binding']}").fetchone()[0] == 0


@citus_only
def test_the_api_answers_as_on_plain_postgres(pg_dsn):
    """The same calls, tenant by tenant (look-alike tenants), answer alike and never name the other tenant."""
    first, second = run_api_calls(pg_dsn, "acme"), run_api_calls(pg_dsn, "acme-corp")
    assert [row[4] for row in first["recall_v3"] if row[0] == "hit"] == ["c1", "c3", "c2"]

    def stable(row: tuple) -> tuple:  # without timestamps and scores (recency moves with the clock)
        return tuple(value for value in row if not isinstance(value, (float, datetime)))

    for name in API_CALLS:
        assert [stable(row) for row in first[name]] == [stable(row) for row in second[name]], name
    assert "acme-corp" not in repr(first) and "acme" not in repr(second).replace("acme-corp", "")


async def test_a_null_tenant_never_leaves_the_client(pg_dsn):
    """The package's own callers refuse a NULL tenant before sending anything (on Citus it would crash the
    coordinator); the server keeps running."""
    from prism_memory import InvalidScopeError, Scope, create_postgres_memory_stores
    from prism_memory.types import EntryRecord, RagChunk

    bystander = psycopg.connect(pg_dsn, autocommit=True)  # a crash would end every session of the node
    stores = await create_postgres_memory_stores(pg_dsn, dimensions=TEST_DIMENSIONS, skip_migrations=True)
    vector = [0.125] * TEST_DIMENSIONS
    scope = Scope(None, "res", "th")  # type: ignore[arg-type]
    calls = [
        lambda: stores.working_store.get_working(scope),
        lambda: stores.working_store.update_working(scope, {"a": 1}, None),
        lambda: stores.vector_store.remember(scope, [EntryRecord("e1", "text", vector, {}, None, None)]),
        lambda: stores.vector_store.recall(scope, vector, "text", 8, 0),
        lambda: stores.vector_store.count_by_thread(scope),
        lambda: stores.vector_store.upsert(None, "docs", [RagChunk("k1", "s1", "text", vector)]),
        lambda: stores.vector_store.query(None, "docs", vector, top_k=3),
        lambda: stores.vector_store.get_current_generation(None, "docs"),
    ]
    try:
        for call in calls:
            with pytest.raises(InvalidScopeError):
                await call()
        assert bystander.execute("select 1").fetchone() == (1,)
    finally:
        await stores.close()
        bystander.close()


@citus_only
def test_a_granted_role_has_the_same_grants_on_every_node(pg_dsn, login_role):
    """A delegated call is checked against the worker's grants: grant_app_role must reach every node."""
    with pytest.warns(UserWarning, match="superuser"):
        grant_app_role(pg_dsn, login_role, TEST_CONFIG)
    assert_distributed_and_delegated(catalog_state(pg_dsn))
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute(f"drop owned by {login_role}")  # a revoke reaches every node too
    assert_distributed_and_delegated(catalog_state(pg_dsn))


@citus_only
@pytest.mark.parametrize("shape", [
    "select * from prism_memory.{call} r where r.written >= 0",
    "with w as materialized (select * from prism_memory.{call}) select * from w",
    "select (select written from prism_memory.{call})",
])
def test_a_write_in_any_shape_runs_on_the_tenant_s_node(pg_dsn, shape):
    """Citus delegates only a call made alone; in any other shape the guard runs on the coordinator and calls
    its delegated copy alone, so the write still runs on the tenant's node, under the thread lock the tenant's
    other writers take (lock_key_v1 would refuse it with PM017 anywhere else)."""
    call = ("remember_v2(%(t)s, 'res-s', 'th-s', array['s1'], array['shape'], array[%(v)s]::vector[])")
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert conn.execute(shape.format(call=call), {"t": "acme", "v": VECTOR}).fetchall() != []
        assert conn.execute("select * from prism_memory.count_entries_v1('acme', 'res-s', 'th-s')").fetchone()[0] == 1


def tokenizer_state(conn) -> set[str]:
    """Each node's text search dictionaries of the install and its v2 terms of one English and CJK text."""
    rows = conn.execute(
        "select result from run_command_on_all_nodes($$select string_agg(d.dictname || ' ' || d.dictinitoption, ',') "
        "|| ' ' || array_to_string(prism_memory.lexical_terms_v2('Tokens expire: 東京タワーに行きました'), ',') "
        "from pg_ts_dict d where d.dictnamespace = 'prism_memory'::regnamespace$$)").fetchall()
    return {row[0] for row in rows}


@citus_only
def test_every_node_has_the_stemming_dictionary_and_tokenizes_alike(pg_dsn):
    """Tokenizer v2 stems with a text search dictionary, which Citus creates on a worker only as a recorded
    dependency of a distributed object (lexical_tokens_v2 names it by a constant): a worker without it could
    not compute text_tsv. Every node holds it, after distribute() and after a migration through revision 0010."""
    expected = {"porter_stem_v1 language = 'porter' expir,token,きま,した,に行,まし,タワ,ワー,ーに,京タ,東京,行き"}
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert tokenizer_state(conn) == expected
    downgrade(pg_dsn, TEST_CONFIG, REVISIONS[-2])
    migrate(pg_dsn, TEST_CONFIG)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        assert tokenizer_state(conn) == expected
    assert_distributed_and_delegated(catalog_state(pg_dsn))


@citus_only
def test_distribute_refuses_a_cluster_without_workers(server_dsn, capsys):
    """Without a worker, Citus would put every shard on the coordinator and register it as ``localhost``, after
    which adding a worker fails until ``citus_set_coordinator_host`` runs, and the shards stay there. A database
    of its own on the coordinator has no node until one is added: distribute refuses it, changing nothing."""
    dsn = server_dsn("noworkers")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create extension citus")
        conn.execute("create extension vector")
    migrate(dsn, TEST_CONFIG)
    with pytest.raises(ConfigurationError, match="no active worker.*citus_set_coordinator_host.*citus_add_node"):
        distribute(dsn, TEST_CONFIG)
    assert cli_main(["--dsn", dsn, "distribute"]) != 0
    assert "no active worker" in capsys.readouterr().err
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("select count(*) from pg_dist_partition").fetchone()[0] == 0
        assert conn.execute("select count(*) from pg_dist_node").fetchone()[0] == 0
