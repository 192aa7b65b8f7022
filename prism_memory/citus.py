"""Distributing an install over a Citus cluster (docs/scaling.md).

:func:`distribute` turns a migrated install on a Citus coordinator into a
tenant-sharded one: every tenant table is distributed by ``tenant_id``,
colocated with the entries table, so one tenant's rows of every table live in
one shard group on one node; the tenant-binding table becomes a reference
table (every node reads it locally); and every function of the schema is
propagated to every node, each API function delegated by its first argument
(the tenant) with ``force_delegation`` (through a copy behind a guard, below),
so a call runs whole on the node that holds the tenant, its per-thread
advisory locks included, in or out of an explicit transaction.

Citus crashes the backend that plans a delegated call (and with it every
session of the node) when the call's tenant is a NULL constant, however it
got there (a literal, ``nullif``, a bound parameter), or when the call is
wrapped in a subquery or an inlined CTE. So the delegated functions are
copies, in a schema of their own (:func:`delegated_schema`) on which no role
but the owner has USAGE, and no caller can name them; the API function of
the install's schema becomes a guard of the same signature, not delegated,
which refuses a NULL tenant and then calls its copy in the one shape Citus
delegates safely. Whatever shape a caller wraps the guard in, the guard runs
on the coordinator, and its copy on the tenant's node.

How the delegated functions plan their statements depends on the Citus build
(:func:`caches_local_plans` asks every node). Citus 12.1.11 to 12.1.12, 13.2.1
to 13.2.2 and 14.0.0 to 14.0.1 never find the local plan they cache for a
generic plan's single-shard statement (citusdata/citus#8371 brought the bug,
#8824 fixes it): every execution plans the shard query again and keeps that
plan for the life of the session, a leak of about 27 kB per statement
executed. There, every API function is set to plan each of its statements for
its parameters (``plan_cache_mode = force_custom_plan``). Where Citus reuses
its local plans, they are set to ``plan_cache_mode = auto``, PostgreSQL's own
choice: a single-shard statement runs from its cached plan after its fifth
execution (Citus declines a generic plan it could not route, so a statement
that joins tables is planned per call), which makes a recall about a third
faster than planning every statement (docs/scaling.md).

It is idempotent: a table already distributed is left alone, and every
function is re-sent to the workers and re-delegated, which is what a
migration needs afterwards (a dropped and re-created function loses its
delegation). :func:`prism_memory.schema.migrate` (and ``alembic upgrade``,
through ``alembic/env.py``) re-applies it after every migration of a
distributed install.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigurationError, SchemaVersionError
from .operations import API_FUNCTIONS
from .schema_config import SCHEMA_VERSION, SchemaConfig, installed_revision

#: The tables distributed by tenant_id (``SchemaConfig.names`` keys), the entries table first: the
#: others are colocated with it.
DISTRIBUTED_TABLES: tuple[str, ...] = (
    "entries",
    "working",
    "invalidation",
    "share_grant",
    "retention_policy",
    "rag_chunk",
    "rag_source_acl",
    "rag_source_version",
    "rag_scope_generations",
    "embedding_model",
)
#: Replicated to every node: tenant_access_v1 reads it wherever the call runs.
REFERENCE_TABLES: tuple[str, ...] = ("tenant_binding",)
#: The first schema revision whose bodies run on Citus (0009); a distributed install never goes below it.
FIRST_REVISION = 9
#: API functions that take no tenant, so run where they are called.
UNDELEGATED_FUNCTIONS: frozenset[str] = frozenset({"install_info_v1"})
#: The first line of every guard's body: how :func:`distribute` tells a guard from an API function's own body.
GUARD_MARKER = "-- prism-memory guard: calls its delegated copy"
#: A guard (formatted with the install's schema, the API function's name, arguments, result and volatility, the
#: marker, the declarations and the call): refuses a NULL tenant with the tenant rule's error (PM001), then
#: calls the copy with every argument, in the FROM clause, as Citus delegates it. Outside a transaction block
#: the copy's call then runs on its node as a call made alone would, in a transaction of its own there:
#: without ``citus.function_opens_transaction_block = off`` Citus would open a distributed transaction
#: around it from the coordinator, which made a recall 1.8 ms slower (0.13 ms with it off).
GUARD_SQL = """
create function {schema}.{name}({arguments})
returns {result}
language plpgsql {volatility} security definer
set search_path = pg_catalog, pg_temp
set citus.function_opens_transaction_block = off
as $guard$
{marker}
{declare}begin
  if $1 is null then
    perform {schema}.assert_id_v1(null, 'tenant_id', 256, 'PM001');
  end if;
  {call}
end;
$guard$
"""


@dataclass(frozen=True, slots=True)
class Distribution:
    """What :func:`distribute` did.

    ``tables_distributed``: tables it distributed now (empty when all already
    were); ``functions_delegated``: API functions delegated by their tenant
    (their copies, each behind its guard); ``functions_propagated``: every
    other function of the schema (the guards among them), sent to every node; ``plan_cache_mode``: what the delegated functions were set to,
    ``"auto"`` where Citus reuses its local plans, else ``"force_custom_plan"``
    (:func:`caches_local_plans`).
    """

    tables_distributed: tuple[str, ...]
    functions_delegated: int
    functions_propagated: int
    plan_cache_mode: str


#: Whether the citus extension is installed in the connected database.
HAS_CITUS_SQL = "select exists (select 1 from pg_catalog.pg_extension where extname = 'citus')"
#: How many workers (primary nodes other than the coordinator, active, taking shards) the cluster has.
ACTIVE_WORKERS_SQL = (
    "select count(*) from pg_catalog.pg_dist_node "
    "where isactive and noderole = 'primary' and shouldhaveshards and groupid <> 0"
)
#: Whether the table named by the parameter is a Citus distributed table (needs citus installed).
IS_DISTRIBUTED_SQL = (
    "select exists (select 1 from pg_catalog.pg_dist_partition where logicalrelid = pg_catalog.to_regclass(%s))"
)


def has_citus(conn) -> bool:
    """Whether the citus extension is installed in the connected database."""
    return conn.execute(HAS_CITUS_SQL).fetchone()[0]


def is_distributed(conn, config: SchemaConfig) -> bool:
    """Whether ``config``'s entries table is a Citus distributed table here (False without citus)."""
    if not has_citus(conn):
        return False
    return conn.execute(IS_DISTRIBUTED_SQL, (config.names["entries"],)).fetchone()[0]


#: The probe :func:`caches_local_plans` runs on every node (``run_command_on_all_nodes``), formatted with the
#: entries table's name: on a node that holds a shard of it, a tenant of that shard, then one single-shard
#: statement executed from a generic plan as an API function's would be; its plans' memory (the ``CachedPlan``
#: contexts of the session) must not grow from the 10th execution to the 60th. It raises PM000 when it does.
LOCAL_PLAN_PROBE = """
do $probe$
declare
  v_tenant text;
  v_before bigint;
begin
  select t.tenant into v_tenant
  from generate_series(1, 4096) as g, lateral (select 'plan-probe-' || g as tenant) as t
  where exists (select 1 from pg_catalog.pg_dist_placement p
                join pg_catalog.pg_dist_local_group l on l.groupid = p.groupid
                where p.shardid = pg_catalog.get_shard_id_for_distribution_column({table_literal}, t.tenant))
  limit 1;
  if v_tenant is null then
    return;  -- no shard of it on this node
  end if;
  perform pg_catalog.set_config('plan_cache_mode', 'force_generic_plan', true);
  for n in 1..60 loop
    perform 1 from {table} e where e.tenant_id = v_tenant limit 1;
    if n = 10 then
      select sum(c.total_bytes) into v_before from pg_catalog.pg_backend_memory_contexts c where c.name = 'CachedPlan';
    end if;
  end loop;
  if (select sum(c.total_bytes) from pg_catalog.pg_backend_memory_contexts c where c.name = 'CachedPlan')
     > v_before + 32768 then
    raise exception 'prism-memory: Citus keeps a new local plan per execution' using errcode = 'PM000';
  end if;
end
$probe$
"""


def caches_local_plans(conn, entries_table: str) -> bool:
    """Whether Citus, on every node of the cluster ``conn`` is connected to (the coordinator), reuses the local
    plan it caches for a generic plan's single-shard statement instead of keeping a new one per execution.

    Runs :data:`LOCAL_PLAN_PROBE` on every node that holds a shard of ``entries_table`` (distributed
    already): 60 executions of one statement on each node (0.07 s on a warm cluster here, 2 s on its first
    connections). False when any node's plans grew, and
    when the probe could not run (``run_command_on_all_nodes`` refused it, say): the safe answer, under which
    :func:`distribute` has every API function plan per call. ``conn`` is a psycopg connection in autocommit.
    """
    from psycopg import sql

    probe = LOCAL_PLAN_PROBE.format(table=entries_table, table_literal=sql.quote(entries_table))
    try:
        results = conn.execute("select success from pg_catalog.run_command_on_all_nodes(%s)", (probe,)).fetchall()
    except Exception:  # noqa: BLE001 - any refusal means: plan per call
        return False
    return bool(results) and all(success for (success,) in results)


def plan_cache_mode(conn, entries_table: str) -> str:
    """The ``plan_cache_mode`` :func:`distribute` sets on the delegated API functions of the cluster ``conn`` is
    connected to: ``"auto"`` where :func:`caches_local_plans`, else ``"force_custom_plan"``."""
    return "auto" if caches_local_plans(conn, entries_table) else "force_custom_plan"


def distribute(dsn: str, config: SchemaConfig | None = None, *, shard_count: int | None = None) -> Distribution:
    """Distribute the install at ``dsn`` (a Citus coordinator) by tenant, and delegate its API (blocking).

    Run it as the schema owner, after :func:`prism_memory.schema.migrate`,
    with the workers already added (``citus_add_node``). ``shard_count``
    applies to tables distributed now (default: ``citus.shard_count``).

    Raises :class:`ConfigurationError` when the database has no citus
    extension, when the schema's name leaves no room for
    :func:`delegated_schema`'s, when the cluster has no active worker (Citus would put every
    shard on the coordinator and register it as ``localhost``, after which
    ``citus_add_node`` fails until ``citus_set_coordinator_host`` runs, and
    the shards would stay there), when the install has tenant-bound roles (role OIDs differ from
    node to node, so a binding cannot follow a role there: docs/scaling.md),
    or when Citus refuses a step; :class:`SchemaVersionError` when the
    install is missing, or at a revision before :data:`FIRST_REVISION` or
    after this package's (an install downgraded to an older Citus revision
    is distributed again as that revision has it).
    """
    import psycopg

    config = config or SchemaConfig()
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            version = _distributable_revision(conn, config)
            distributed = _distribute_tables(conn, config.names, version, shard_count)
            mode = plan_cache_mode(conn, config.names["entries"])
            delegated, propagated = _distribute_functions(conn, config, mode)
    except psycopg.Error as error:
        raise ConfigurationError(f"Citus refused to distribute the install: {error}") from error
    return Distribution(tuple(distributed), delegated, propagated, mode)


def _distributable_revision(conn, config: SchemaConfig) -> int:
    """The revision of ``config``'s install over ``conn``, once it is known that :func:`distribute` may take it;
    raises its :class:`ConfigurationError` or :class:`SchemaVersionError` otherwise."""
    from psycopg import sql

    names = config.names
    if not has_citus(conn):
        raise ConfigurationError(
            "this database has no citus extension: distribute() needs a Citus coordinator "
            "(create extension citus, then add the workers)")
    if not conn.execute(ACTIVE_WORKERS_SQL).fetchone()[0]:
        raise ConfigurationError(
            "this Citus cluster has no active worker: distributing now would put every shard on the coordinator, "
            "and they would stay there. Add the workers first, on the coordinator: "
            "select citus_set_coordinator_host('<coordinator host>', <port>); "
            "select citus_add_node('<worker host>', <port>) for each worker; then distribute (docs/scaling.md)")
    if len(delegated_schema(config).encode()) > 63:
        raise ConfigurationError(
            f"schema {config.schema!r} is too long to distribute: its delegated copies go to "
            f"{delegated_schema(config)!r}, over PostgreSQL's 63 bytes")
    if conn.execute("select pg_catalog.to_regclass(%s) is null", (names["entries"],)).fetchone()[0]:
        raise SchemaVersionError(f"schema {config.schema!r} holds no install here: migrate it first")
    version = installed_revision(conn, config.schema)
    if version is None or not FIRST_REVISION <= int(version) <= SCHEMA_VERSION:
        raise SchemaVersionError(
            f"schema {config.schema!r} is at revision {version}; distribute() takes revisions "
            f"{FIRST_REVISION:04d} to {SCHEMA_VERSION:04d}: migrate it first")
    if conn.execute(sql.SQL("select exists (select 1 from {})").format(sql.SQL(names["tenant_binding"]))).fetchone()[0]:
        raise ConfigurationError(
            "this install has tenant-bound roles; bindings are kept by role OID, which differs from node to node, "
            "so they cannot be distributed (revoke them with grant_app_role/revoke_app_role first)")
    return int(version)


def _distribute_tables(conn, names: dict[str, str], version: int, shard_count: int | None) -> list[str]:
    """Make the reference tables and distribute the tenant tables not yet distributed (an install at ``version``
    lacks the tables later revisions add); returns the names of those it distributed now."""
    done = {row[0] for row in conn.execute("select logicalrelid::text from pg_catalog.pg_dist_partition")}
    distributed: list[str] = []
    for key in REFERENCE_TABLES:
        if _regclass_text(conn, names[key]) not in done:
            conn.execute("select create_reference_table(%s)", (names[key],))
            distributed.append(names[key])
    for key in DISTRIBUTED_TABLES:
        table = _regclass_text(conn, names[key])
        if table in done or (table is None and version < SCHEMA_VERSION):  # a table a later revision adds
            continue
        conn.execute(
            "select create_distributed_table(%s, 'tenant_id', colocate_with => %s, shard_count => %s)",
            (names[key], "default" if key == "entries" else names["entries"], shard_count),
        )
        distributed.append(names[key])
    return distributed


def delegated_schema(config: SchemaConfig) -> str:
    """The schema that holds the delegated copies of ``config``'s API functions: ``<schema>_delegated``."""
    return f"{config.schema}_delegated"


def _distribute_functions(conn, config: SchemaConfig, mode: str) -> tuple[int, int]:
    """Send every function of the schema to every node, each API function behind its guard, its copy delegated
    by its tenant and set to plan_cache_mode ``mode``; returns how many were delegated and how many only
    propagated (the guards among them)."""
    from psycopg import sql

    names = config.names
    delegated = propagated = 0
    api = {name for name, _ in API_FUNCTIONS} - UNDELEGATED_FUNCTIONS
    copies = sql.Identifier(delegated_schema(config))
    conn.execute(sql.SQL("create schema if not exists {}").format(copies))
    # Every type a guard names is then printed schema-qualified: a guard runs with pg_catalog alone on its path.
    conn.execute("select pg_catalog.set_config('search_path', 'pg_catalog', false)")
    # SQL-language bodies last: a worker checks such a body when the function arrives, so the functions
    # it calls must be there first.
    functions = conn.execute(
        "select p.oid, p.oid::regprocedure::text, p.proname from pg_catalog.pg_proc p "
        "where p.pronamespace = pg_catalog.to_regnamespace(%s) "
        "order by p.prolang = (select l.oid from pg_catalog.pg_language l where l.lanname = 'sql'), p.oid",
        (names["schema"],),
    ).fetchall()
    kept: set[str] = set()
    for oid, signature, name in functions:
        if name in api:
            copy = _guard(conn, config, oid)
            kept.add(copy)
            conn.execute(
                "select create_distributed_function(%s, '$1', colocate_with => %s, force_delegation => true)",
                (copy, names["entries"]),
            )
            # auto where Citus reuses its local plans; else every statement planned for its parameters,
            # since Citus re-plans a cached generic plan's single-shard statement on every execution
            # and keeps each of those plans until the session ends (about 27 kB a statement: a
            # worker's connection grew by 1.3 GB in 16 s of update_working calls). Either replaces a
            # function's own setting (recall_v4's force_generic_plan: Citus cannot route a generic
            # plan of a statement that joins tables). Citus propagates the setting to every node.
            conn.execute(sql.SQL("alter function {} set plan_cache_mode = {}").format(sql.SQL(copy), sql.SQL(mode)))
            delegated += 1
        else:
            conn.execute("select create_distributed_function(%s)", (signature,))
            propagated += 1
    for (stale,) in conn.execute(_SIGNATURES_SQL, (delegated_schema(config),)).fetchall():
        if stale not in kept and ".from_text_" not in stale:  # the copy of a function a migration dropped or changed
            conn.execute(sql.SQL("drop function {}").format(sql.SQL(stale)))
    # create_distributed_function re-creates a function on the workers with the default ACL
    # (EXECUTE for PUBLIC) and then adds the coordinator's grants: take PUBLIC's away again, on
    # every node (Citus propagates the revoke), as the revisions do. The copies keep none: only
    # their guards (running as the owner) call them.
    schema = sql.Identifier(config.schema)
    conn.execute(sql.SQL("revoke execute on all functions in schema {} from public").format(schema))
    conn.execute(sql.SQL("revoke execute on all functions in schema {} from public").format(copies))
    conn.execute(sql.SQL("grant execute on function {}.install_info_v1() to public").format(schema))
    return delegated, propagated


#: The signatures (``schema.name(argument types)``, quoted as needed) of the functions of schema %s.
_SIGNATURES_SQL = (
    "select format('%%I.%%I(%%s)', n.nspname, p.proname, pg_catalog.oidvectortypes(p.proargtypes)) "
    "from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace where n.nspname = %s"
)
#: What a guard is made of, for the function of OID %s: whether it is one already, its signature, its copy's,
#: its schema's, its copy schema's and its name (quoted as needed), its arguments, result, whether it returns a
#: set, its volatility, for each argument the name of its type when it is not built in (else NULL), its
#: definition and the roles granted EXECUTE on it but its owner.
_FUNCTION_SQL = """
select strpos(p.prosrc, %s::text) > 0,
       format('%%I.%%I(%%s)', n.nspname, p.proname, pg_catalog.oidvectortypes(p.proargtypes)),
       format('%%I.%%I(%%s)', %s::text, p.proname, pg_catalog.oidvectortypes(p.proargtypes)),
       format('%%I', n.nspname), format('%%I', %s::text), format('%%I', p.proname),
       pg_catalog.pg_get_function_arguments(p.oid), pg_catalog.pg_get_function_result(p.oid),
       p.proretset, p.provolatile,
       array(select case when t.oid >= 16384 then pg_catalog.format_type(t.oid, null) end
             from unnest(p.proargtypes::oid[]) with ordinality as a(type, n) join pg_catalog.pg_type t on t.oid = a.type
             order by a.n),
       pg_catalog.pg_get_functiondef(p.oid),
       array(select r.rolname from pg_catalog.aclexplode(p.proacl) a join pg_catalog.pg_roles r on r.oid = a.grantee
             where a.privilege_type = 'EXECUTE' and a.grantee <> p.proowner)
from pg_catalog.pg_proc p join pg_catalog.pg_namespace n on n.oid = p.pronamespace
where p.oid = %s
"""
_VOLATILITY = {"i": "immutable", "s": "stable", "v": "volatile"}


def _guard(conn, config: SchemaConfig, oid: int) -> str:
    """Put the API function of OID ``oid`` behind a guard (a copy of its body in :func:`delegated_schema`, and
    in its place a guard of the same signature and grants, not delegated); returns the copy's signature.

    A guard already there is kept (its copy must exist: else :class:`ConfigurationError`). The guard is
    dropped and created, not replaced: Citus keeps a replaced function's delegation on the workers."""
    from psycopg import sql

    copies = delegated_schema(config)
    (guarded, signature, copy, schema, copy_schema, name, arguments, result, returns_set, volatility, custom_types,
     definition, grantees) = conn.execute(_FUNCTION_SQL, (GUARD_MARKER, copies, copies, oid)).fetchone()
    if guarded:
        if conn.execute("select pg_catalog.to_regprocedure(%s) is null", (copy,)).fetchone()[0]:
            raise ConfigurationError(f"{signature} is a guard whose delegated copy {copy} is missing: migrate again")
        return copy
    conn.execute(definition.replace(f"FUNCTION {schema}.{name}(", f"FUNCTION {copy_schema}.{name}(", 1))
    # Citus sends a delegated call's parameters along with the call it prints with their values, and sends
    # the type of one of a type that is not built in (vector) as unknown, which the node then cannot
    # resolve: such an argument reaches the call as text, turned back by an immutable function (which the
    # planner runs once, so the printed call holds the value).
    declared = [f"  v_{n} text := ${n}::text;\n" for n, type_name in enumerate(custom_types, 1) if type_name]
    passed = ", ".join(f"{_from_text(conn, copy_schema, type_name)}(v_{n})" if type_name else f"${n}"
                       for n, type_name in enumerate(custom_types, 1))
    target = f"{copy_schema}.{name}({passed})"
    if returns_set:
        call = f"return query select * from {target};"
    elif result == "void":
        call = f"perform * from {target};"
    else:
        declared.append(f"  v_result {result};\n")
        call = f"select * into v_result from {target};\n  return v_result;"
    declare = "declare\n" + "".join(declared) if declared else ""
    conn.execute(sql.SQL("drop function {}").format(sql.SQL(signature)))
    conn.execute(GUARD_SQL.format(
        schema=schema, name=name, arguments=arguments, result=result,
        volatility=_VOLATILITY[volatility], marker=GUARD_MARKER, declare=declare, call=call))
    for grantee in grantees:
        conn.execute(sql.SQL("grant execute on function {} to {}").format(sql.SQL(signature), sql.Identifier(grantee)))
    return copy


def _from_text(conn, copy_schema: str, type_name: str) -> str:
    """The name of the immutable function of ``copy_schema`` that reads a value of type ``type_name``
    (schema-qualified) from its text, created and sent to every node if missing."""
    name = f"{copy_schema}.from_text_" + "".join(
        c if c.isalnum() else "_" for c in type_name.replace("[]", "_array")).strip("_")
    if conn.execute("select pg_catalog.to_regprocedure(%s) is null", (f"{name}(text)",)).fetchone()[0]:
        conn.execute(f"create function {name}(p_text text) returns {type_name} language plpgsql immutable "
                     f"set search_path = pg_catalog, pg_temp as $from$ begin return p_text::{type_name}; end $from$")
        conn.execute("select create_distributed_function(%s)", (f"{name}(text)",))
    return name


def _regclass_text(conn, name: str) -> str:
    return conn.execute("select pg_catalog.to_regclass(%s)::text", (name,)).fetchone()[0]
