"""The schema revisions as files, and the command that cuts them (prism_memory/revision.py).

- Each revision file is the literal SQL it runs: every function it creates is
  written out as its head file, and a downgrade writes out what the revision
  before installed.
- The functions the chain installs are the head files (an edit of sql/schema
  needs a revision).
- A released revision renders as it did when released; no revision keeps the
  cutter's placeholder.
- Cutting, amending and refusing, on a copy of sql/ and alembic/.
"""

from __future__ import annotations

import re
import shutil

import psycopg
import pytest
from prism_memory import revision as revision_command
from prism_memory import sql_source
from prism_memory.revision import PLACEHOLDER, chain_functions, new_revision, released, rendering_digest
from prism_memory.schema import REVISIONS, SchemaConfig, downgrade, migrate

from catalog import catalog, catalog_diff

PARTS = ("upgrade", "downgrade", "vector_search", "vector_search_down")
#: The revision that wrote out every function; those before it changed some with ``alter function`` (0004-0006),
#: so the function files they wrote are not all the catalog they left.
ALL_WRITTEN_OUT = "0007"


RELEASED = released()


@pytest.mark.parametrize("revision", sorted(RELEASED))
def test_a_released_revision_renders_as_it_did_when_released(revision):
    assert rendering_digest(revision) == RELEASED[revision]


def test_the_released_revisions_are_the_oldest_ones():
    """Only the newest revisions may be unreleased (cut, not landed yet); every other one is pinned."""
    assert list(RELEASED) == list(REVISIONS[: len(RELEASED)])


def test_the_released_renderings_cover_the_python_constants(monkeypatch):
    """Constants that change what a revision installs at some width, or in its stopwords, change its digest."""
    from prism_memory import schema, schema_config

    for module, name, value in ((schema_config, "PLAIN_STORAGE_MAX_DIMENSIONS", 2048), (schema, "HNSW_MAX_DIMENSIONS", 1024)):
        with monkeypatch.context() as patch:
            patch.setattr(module, name, value)
            assert any(rendering_digest(revision) != digest for revision, digest in RELEASED.items()), name
    with monkeypatch.context() as patch:
        patch.setattr(schema_config, "stopwords_sql_literal", lambda: "array['the']")
        assert any(rendering_digest(revision) != digest for revision, digest in RELEASED.items()), "stopwords"


def unexplained_head_edits() -> list[str]:
    """The head function files that differ from what the revisions install (edited, added or removed)."""
    installed, head = chain_functions()[0], sql_source.head_functions()
    return sorted(name for name in installed.keys() | head.keys() if installed.get(name) != head.get(name))


CUT_OR_AMEND = ("cut a revision (python -m prism_memory.revision NAME), or re-cut the newest one if it is not "
                "released yet (python -m prism_memory.revision --amend)")


def test_every_head_function_is_what_the_revisions_install():
    """Editing a file in sql/schema/functions needs a revision that writes it out (docs/architecture.md)."""
    assert unexplained_head_edits() == [], CUT_OR_AMEND


def test_every_function_a_revision_creates_is_written_out_as_its_head_file():
    for revision in REVISIONS:
        for part in PARTS:
            text = sql_source.revision_file(revision, part) or ""
            assert not re.search(r"create\s+(or\s+replace\s+)?function", sql_source.FILE_BLOCK.sub("", text), re.I), \
                (revision, part)
            for relative, block in sql_source.file_blocks(text):
                name = re.fullmatch(r"functions/(\w+)\.sql", relative)
                if name:
                    assert block.count(f"create or replace function {{{{schema}}}}.{name.group(1)}(") == 1, relative


@pytest.mark.parametrize("revision", [revision for revision in REVISIONS if revision > ALL_WRITTEN_OUT])
def test_a_downgrade_writes_out_what_the_revision_before_installed(revision):
    before = chain_functions(REVISIONS[REVISIONS.index(revision) - 1])[0]
    blocks = sql_source.file_blocks(sql_source.revision_file(revision, "downgrade"))
    assert blocks
    for relative, text in blocks:
        assert text == before[relative.removeprefix("functions/").removesuffix(".sql")], relative


def test_revisions_change_a_function_only_by_writing_it_out():
    """``alter function`` would make the text a downgrade writes out differ from the catalog it restores."""
    for revision in REVISIONS:
        if revision >= ALL_WRITTEN_OUT:
            for part in PARTS:
                assert "alter function" not in (sql_source.revision_file(revision, part) or "").lower(), (revision, part)


def placeholders_left() -> list[str]:
    """Revision files and Alembic modules whose header or docstring still holds the cutter's placeholder."""
    pattern = re.compile(re.escape(PLACEHOLDER.split(" and why")[0]), re.I)
    files = [*sql_source.MIGRATIONS_SQL_DIR.glob("*.sql"), *(sql_source.ALEMBIC_DIR / "versions").glob("*.py")]
    return sorted(path.name for path in files if pattern.search(sql_source.read(path)))


def test_no_revision_keeps_the_placeholder():
    assert placeholders_left() == []


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A copy of sql/ and alembic/ that sql_source (and so the cutter and the migrations) reads instead.

    The copy's head must be what its revisions install: with a head edit not cut yet, the cutter's tests
    would cut it too, so they are skipped (test_every_head_function_is_what_the_revisions_install names it).
    """
    if unexplained_head_edits():
        pytest.skip(f"the head has edits no revision installs: {CUT_OR_AMEND}")
    shutil.copytree(sql_source.SQL_DIR, tmp_path / "sql", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(sql_source.ALEMBIC_DIR, tmp_path / "alembic", ignore=shutil.ignore_patterns("__pycache__"))
    for name, value in {"SQL_DIR": tmp_path / "sql", "SCHEMA_DIR": tmp_path / "sql" / "schema",
                        "FUNCTIONS_DIR": tmp_path / "sql" / "schema" / "functions",
                        "MIGRATIONS_SQL_DIR": tmp_path / "sql" / "migrations", "ALEMBIC_DIR": tmp_path / "alembic"}.items():
        monkeypatch.setattr(sql_source, name, value)
    return tmp_path


LAST = REVISIONS[-1]
NEXT = f"{int(LAST) + 1:04d}"
ADDED = "create or replace function {{schema}}.recall_v9() returns integer language sql as $$ select 3 $$;\n"


def add_function(name: str, text: str) -> None:
    """Write a new head function file and list it last in functions.sql."""
    (sql_source.FUNCTIONS_DIR / f"{name}.sql").write_text(text)
    manifest = sql_source.SCHEMA_DIR / "functions.sql"
    manifest.write_text(manifest.read_text() + f"\\ir functions/{name}.sql\n")


def migrated_through_and_back(server_dsn, prefix: str) -> tuple[str, str]:
    """A database migrated to the revision before the newest, and one migrated to the newest and downgraded."""
    config = SchemaConfig(dimensions=16)
    fresh, through = server_dsn(f"{prefix}_fresh"), server_dsn(f"{prefix}_through")
    migrate(fresh, config, LAST)
    migrate(through, config)
    downgrade(through, config, LAST)
    return fresh, through


def test_a_new_revision_writes_out_the_edit_and_the_text_it_replaces(scratch, server_dsn):
    """Edit recall_v3's head file and add recall_v9, then cut the next revision the way docs/architecture.md says."""
    head = sql_source.FUNCTIONS_DIR / "recall_v3.sql"
    released = head.read_text()
    changed = released.replace("-- Semantic recall over one thread", "-- Semantic recall over one thread (next)")
    changed = changed.replace("  perform assert_embedding_v1(p_query_embedding, 'the query embedding');\n", "")
    head.write_text(changed)
    add_function("recall_v9", ADDED)
    untouched = sql_source.revision_file(LAST, "upgrade")
    assert unexplained_head_edits() == ["recall_v3", "recall_v9"]

    written = {path.name for path in new_revision("next")}
    assert written == {f"{NEXT}_next.sql", f"{NEXT}_next.down.sql", f"{NEXT}_next.py"}
    assert unexplained_head_edits() == []
    assert list(sql_source.revisions())[-1] == NEXT
    assert sql_source.revision_file(LAST, "upgrade") == untouched
    upgrade = sql_source.revision_file(NEXT, "upgrade")
    assert [relative for relative, _ in sql_source.file_blocks(upgrade)] == [
        "functions/install_info_v1.sql", "functions/recall_v3.sql", "functions/recall_v9.sql"]
    assert dict(sql_source.file_blocks(upgrade))["functions/recall_v3.sql"] == changed
    assert "revoke execute on all functions" in upgrade
    down = sql_source.revision_file(NEXT, "downgrade")
    assert dict(sql_source.file_blocks(down))["functions/recall_v3.sql"] == released
    assert "drop function {{schema}}.recall_v9(/* its argument types */);" in down
    assert placeholders_left() == [f"{NEXT}_next.py", f"{NEXT}_next.sql"]

    # The revision runs: up to it and back gives exactly a fresh migrate to the one before.
    down_file = sql_source.MIGRATIONS_SQL_DIR / f"{NEXT}_next.down.sql"
    down_file.write_text(down_file.read_text().replace("recall_v9(/* its argument types */)", "recall_v9()"))
    config = SchemaConfig(dimensions=16)
    fresh, through = server_dsn("rev_fresh"), server_dsn("rev_through")
    migrate(fresh, config, LAST)
    migrate(through, config)
    with psycopg.connect(through) as conn:
        assert conn.execute("select version_num from prism_memory.alembic_version").fetchone() == (NEXT,)
        assert conn.execute("select prosrc like '%assert_embedding_v1%' from pg_proc "
                            "where proname = 'recall_v3'").fetchone() == (False,)
        assert conn.execute("select has_function_privilege('public', 'prism_memory.recall_v9()', 'execute')"
                            ).fetchone() == (False,)
    downgrade(through, config, LAST)
    assert catalog_diff(catalog(fresh), catalog(through)) == ""


def test_a_revision_that_removes_a_function_restores_it_on_downgrade_for_its_owner_only(scratch, server_dsn):
    """A downgrade creates the retired function anew, which PostgreSQL lets PUBLIC execute: the revision takes that back."""
    retired = sql_source.FUNCTIONS_DIR / "unshare_v1.sql"
    released = retired.read_text()
    retired.unlink()
    manifest = sql_source.SCHEMA_DIR / "functions.sql"
    manifest.write_text(manifest.read_text().replace("\\ir functions/unshare_v1.sql\n", ""))
    new_revision("retire")
    upgrade_file = sql_source.MIGRATIONS_SQL_DIR / f"{NEXT}_retire.sql"
    upgrade_file.write_text(upgrade_file.read_text().replace("(/* its argument types */)", "(text, text, text, text[])"))
    down = sql_source.revision_file(NEXT, "downgrade")
    assert dict(sql_source.file_blocks(down))["functions/unshare_v1.sql"] == released
    assert down.index(released) < down.index("revoke execute on all functions in schema {{schema}}")

    fresh, through = migrated_through_and_back(server_dsn, "rev_retire")
    with psycopg.connect(through) as conn:
        assert conn.execute("select has_function_privilege('public', "
                            "'prism_memory.unshare_v1(text, text, text, text[])', 'execute')").fetchone() == (False,)
    assert catalog_diff(catalog(fresh), catalog(through)) == ""

    # The name stays retired: no revision brings it back.
    retired.write_text(released)
    manifest.write_text(manifest.read_text() + "\\ir functions/unshare_v1.sql\n")
    with pytest.raises(ValueError, match="never used again"):
        new_revision("reuse")


def test_added_functions_are_created_in_install_order(scratch, server_dsn):
    """A SQL-language body is checked when it is created: the function it calls must come first."""
    add_function("zz_helper_v1", "create or replace function {{schema}}.zz_helper_v1() returns integer "
                 "language sql immutable as $$ select 1 $$;\n")
    caller = ("create or replace function {{schema}}.aa_caller_v1() returns integer "
              "language sql immutable begin atomic select {{schema}}.zz_helper_v1(); end;\n")
    add_function("aa_caller_v1", caller)
    new_revision("ordered")
    upgrade = sql_source.revision_file(NEXT, "upgrade")
    assert upgrade.index("functions/zz_helper_v1.sql") < upgrade.index("functions/aa_caller_v1.sql")
    down_file = sql_source.MIGRATIONS_SQL_DIR / f"{NEXT}_ordered.down.sql"
    down = down_file.read_text().replace("zz_helper_v1(/* its argument types */)", "zz_helper_v1()")
    down_file.write_text(down.replace("aa_caller_v1(/* its argument types */)", "aa_caller_v1()"))
    fresh, through = migrated_through_and_back(server_dsn, "rev_order")
    assert catalog_diff(catalog(fresh), catalog(through)) == ""


#: Head texts a revision must carry byte for byte.
_AWKWARD_TEXTS = {
    "other line breaks": "-- a form feed \x0c, a NEL \x85 and a line separator \u2028 in one line\n",
    "CRLF": "-- edited on Windows\r\n-- and a lone carriage return \r in a line\n",
}


@pytest.mark.parametrize("edit", list(_AWKWARD_TEXTS))
def test_a_revision_keeps_every_byte_of_a_head_file(scratch, edit):
    path = sql_source.FUNCTIONS_DIR / "purge_v1.sql"
    released = path.read_bytes()
    head = released + _AWKWARD_TEXTS[edit].encode()
    path.write_bytes(head)
    new_revision("awkward")
    upgrade = (sql_source.MIGRATIONS_SQL_DIR / f"{NEXT}_awkward.sql").read_bytes()
    down = (sql_source.MIGRATIONS_SQL_DIR / f"{NEXT}_awkward.down.sql").read_bytes()
    assert b"-- file functions/purge_v1.sql\n" + head + b"-- end of functions/purge_v1.sql\n" in upgrade
    assert b"-- file functions/purge_v1.sql\n" + released + b"-- end of functions/purge_v1.sql\n" in down
    assert unexplained_head_edits() == []


def test_a_head_file_without_a_final_newline_is_refused(scratch):
    path = sql_source.FUNCTIONS_DIR / "purge_v1.sql"
    path.write_bytes(path.read_bytes() + b"-- a last line without its newline")
    with pytest.raises(ValueError, match="end with a newline"):
        new_revision("unended")
    assert list(sql_source.revisions()) == list(REVISIONS)


def test_a_new_revision_needs_a_change(scratch):
    with pytest.raises(ValueError, match="nothing to cut"):
        new_revision("empty")
    assert list(sql_source.revisions()) == list(REVISIONS)


def test_amend_recuts_the_newest_revision_and_keeps_what_its_author_wrote(scratch, capsys):
    """Cut, write the header, a table change and the drop's argument types, edit the head twice, amend each time."""
    recall, count = sql_source.FUNCTIONS_DIR / "recall_v3.sql", sql_source.FUNCTIONS_DIR / "count_entries_v1.sql"
    released_recall, released_count = recall.read_text(), count.read_text()
    recall.write_text(released_recall.replace("-- Semantic recall over one thread", "-- Semantic recall (first cut)"))
    add_function("recall_v9", ADDED)
    new_revision("first")
    up_file, down_file = (sql_source.MIGRATIONS_SQL_DIR / f"{NEXT}_first{suffix}" for suffix in (".sql", ".down.sql"))
    header = f"-- prism-memory schema revision {NEXT}: first. Adds recall_v9 and a column.\n"
    up_file.write_text(up_file.read_text().replace(f"-- prism-memory schema revision {NEXT}: first. {PLACEHOLDER}\n", header)
                       .replace("{{pin_search_path}}\n", "{{pin_search_path}}\n\nalter table {{entries}} add column note text;\n"))
    after = "select 'written after the drops';\n"  # what needs the functions, as grants on restored ones
    down_file.write_text(down_file.read_text().replace("recall_v9(/* its argument types */);\n", f"recall_v9();\n\n{after}")
                         .replace("{{pin_search_path}}\n", "{{pin_search_path}}\n\nalter table {{entries}} drop column note;\n"))

    for step, edit in enumerate(("(amended)", "(amended again)")):
        recall.write_text(released_recall.replace("-- Semantic recall over one thread", f"-- Semantic recall {edit}"))
        count.write_text(released_count + f"-- edited after cut {step}\n")
        assert revision_command.main(["--amend", "second"]) == 0
        assert f"{NEXT}_second.sql" in capsys.readouterr().out
        assert list(sql_source.revisions().values())[-1] == f"{NEXT}_second"
        assert not (sql_source.MIGRATIONS_SQL_DIR / f"{NEXT}_first.sql").exists()
        assert not (sql_source.ALEMBIC_DIR / "versions" / f"{NEXT}_first.py").exists()
        assert unexplained_head_edits() == []
        upgrade, down = sql_source.revision_file(NEXT, "upgrade"), sql_source.revision_file(NEXT, "downgrade")
        assert upgrade.startswith(header.replace(": first.", ": second."))
        assert "alter table {{entries}} add column note text;\n" in upgrade and "drop column note;" in down
        assert edit in upgrade and "(first cut)" not in upgrade and ADDED in upgrade
        assert dict(sql_source.file_blocks(down))["functions/recall_v3.sql"] == released_recall
        assert dict(sql_source.file_blocks(down))["functions/count_entries_v1.sql"] == released_count
        assert f"drop function {{{{schema}}}}.recall_v9();\n\n{after}\nreset search_path;\n" in down


def test_amend_refuses_a_released_revision(scratch, capsys):
    assert revision_command.main(["--release"]) == 0  # the newest revisions, released
    assert released()[LAST] == rendering_digest(LAST)
    assert revision_command.main(["--release"]) == 0 and "pinned already" in capsys.readouterr().out
    count = sql_source.FUNCTIONS_DIR / "count_entries_v1.sql"
    count.write_text(count.read_text() + "-- edited\n")
    before = {path.name: path.read_bytes() for path in sql_source.MIGRATIONS_SQL_DIR.iterdir()}
    with pytest.raises(ValueError, match="released"):
        new_revision(sql_source.revisions()[LAST][5:], amend=True)
    with pytest.raises(SystemExit) as refused:
        revision_command.main(["--amend"])
    assert refused.value.code == 2 and f"revision {LAST} is released" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in sql_source.MIGRATIONS_SQL_DIR.iterdir()} == before


def test_amend_keeps_the_name_unless_given_another(scratch, capsys):
    count = sql_source.FUNCTIONS_DIR / "count_entries_v1.sql"
    count.write_text(count.read_text() + "-- edited\n")
    new_revision("first")
    count.write_text(count.read_text() + "-- edited again\n")
    assert revision_command.main(["--amend"]) == 0
    assert list(sql_source.revisions().values())[-1] == f"{NEXT}_first" and "renamed" not in capsys.readouterr().out
    assert revision_command.main(["--amend", "second"]) == 0
    assert f"renamed {NEXT}_first to {NEXT}_second" in capsys.readouterr().out


def test_the_command_prints_what_a_revision_runs(capsys):
    assert revision_command.main(["--show", LAST, "--dimensions", "16"]) == 0
    shown = capsys.readouterr().out
    assert '"prism_memory".' in shown and "{{" not in shown and "create or replace function" in shown
    assert revision_command.main(["--show", LAST, "--down"]) == 0
    assert "-- Reverts revision" in capsys.readouterr().out
