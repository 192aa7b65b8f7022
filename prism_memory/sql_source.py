"""The SQL source: the readable head schema, the released revisions, and how they render.

Layout (docs/architecture.md walks through it):

- ``sql/schema/install.sql`` is the whole database at head, in install order;
  it includes ``tables.sql`` and one ``functions/<name>.sql`` per live
  function with ``\\ir`` lines (psql's "include relative" syntax).
- ``sql/migrations/NNNN_<name>.sql`` (and ``.down.sql``) are the schema
  revisions Alembic applies. Revisions 0001-0006 were written before the head
  existed and carry their own function bodies. From 0007 on, a revision names
  the functions it (re)creates with ``\\ir ../schema/functions/<name>.sql``
  lines instead of copying their bodies.
- A released revision must keep installing what it installed when it was
  released, although the head files move on. So a revision that changes a
  function ships the change as a unified diff, ``NNNN_<name>.functions.diff``
  (old body to new body, as ``git diff`` writes it). A function's body as of
  revision N is the head file with the diffs of every later revision applied
  in reverse, newest first (the reverse-delta storage of RCS): the head is
  stored once, in full, and history only as the lines that changed.
- ``sql/migrations/functions.sha256`` holds the SHA-256 of every head
  function file as of the newest revision, so a head edit that no revision
  ships yet is caught by a test rather than silently rewriting history.

A revision's upgrade file resolves its ``\\ir`` lines at its own revision; its
downgrade file at the revision before it (the body to go back to). A
``\\history NNNN <function>`` line in a downgrade file stands for that
function's definition as written in the released revision file ``NNNN``
(used to restore what revision 0007 retired).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

__all__ = [
    "ALEMBIC_DIR",
    "FUNCTIONS_DIR",
    "MIGRATIONS_SQL_DIR",
    "SCHEMA_DIR",
    "SQL_DIR",
    "DeltaError",
    "expand",
    "function_source",
    "head_function_digests",
    "head_function_names",
    "new_revision",
    "read_function_lock",
    "released_definition",
    "reverse_apply",
    "revision_template",
    "revisions",
]


def _data_dir(installed: str, source: str) -> Path:
    """A packaged data folder: ``prism_memory/<installed>`` in a wheel, ``<repo>/<source>`` in a checkout."""
    package = Path(__file__).resolve().parent
    return package / installed if (package / installed).is_dir() else package.parent / source


SQL_DIR = _data_dir("sql", "sql")
SCHEMA_DIR = SQL_DIR / "schema"
FUNCTIONS_DIR = SCHEMA_DIR / "functions"
MIGRATIONS_SQL_DIR = SQL_DIR / "migrations"
FUNCTION_LOCK = MIGRATIONS_SQL_DIR / "functions.sha256"
#: The Alembic environment and its ``versions`` modules (one per revision).
ALEMBIC_DIR = _data_dir("migrations", "alembic")

_REVISION_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")
_INCLUDE = re.compile(r"^\\ir (\S+)[ \t]*$", re.M)
_HISTORY = re.compile(r"^\\history (\d{4}) (\w+)[ \t]*$", re.M)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class DeltaError(RuntimeError):
    """A revision's function diff does not apply to the head file (the head was edited without a revision)."""


def revisions() -> dict[str, str]:
    """Every schema revision in order: ``{"0001": "0001_initial", ...}`` (from the files in sql/migrations)."""
    found = {}
    for path in sorted(MIGRATIONS_SQL_DIR.glob("*.sql")):
        match = _REVISION_FILE.match(path.name)
        if match and match.group(2) != "vector_search":
            found[match.group(1)] = path.stem
    return found


def _previous(revision: str) -> str | None:
    names = list(revisions())
    index = names.index(revision)
    return names[index - 1] if index else None


def head_function_names() -> list[str]:
    """The names of every live function, one per file in ``sql/schema/functions``, sorted."""
    return sorted(path.stem for path in FUNCTIONS_DIR.glob("*.sql"))


def head_function_digests() -> dict[str, str]:
    """SHA-256 (hex) of every head function file, keyed by ``functions/<name>.sql``."""
    return {
        f"functions/{path.name}": hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(FUNCTIONS_DIR.glob("*.sql"))
    }


def read_function_lock() -> dict[str, str]:
    """The digests recorded in ``sql/migrations/functions.sha256`` (``sha256sum`` format)."""
    lock = {}
    for line in FUNCTION_LOCK.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            lock[name.lstrip("*")] = digest
    return lock


def _function_deltas(delta: str) -> dict[str, list[str]]:
    """Split a multi-file unified diff into ``{function name: its hunk lines}``.

    Hunks are read by their line counts (a removed SQL comment starts with
    ``---`` too). The name is the file's stem on the ``---`` side, or on the
    ``+++`` side for a file the diff creates; other header lines are ignored.
    """
    sections: dict[str, list[str]] = {}
    lines = delta.split("\n")
    index, old_path, current = 0, None, None
    while index < len(lines):
        line = lines[index]
        hunk = _HUNK.match(line)
        if line.startswith("--- "):
            old_path = line[4:].split("\t")[0].strip()
        elif line.startswith("+++ ") and old_path is not None:
            new_path = line[4:].split("\t")[0].strip()
            current = sections.setdefault(Path(new_path if old_path == "/dev/null" else old_path).stem, [])
        elif hunk and current is not None:
            current.append(line)
            old_left, new_left = int(hunk.group(2) or 1), int(hunk.group(4) or 1)
            while old_left or new_left:
                index += 1
                body = lines[index] or " "  # a blank context line written without its leading space
                current.append(body)
                if body[:1] == "\\":
                    continue
                old_left -= body[:1] in " -"
                new_left -= body[:1] in " +"
        index += 1
    return sections


def reverse_apply(text: str, delta_lines: list[str], label: str) -> str:
    """Undo one file's unified diff: ``text`` is the new side, the result is the old side.

    Every hunk must match ``text`` exactly where the diff says; raises
    :class:`DeltaError` naming ``label`` otherwise.
    """
    lines = text.split("\n")
    hunks: list[tuple[int, list[str], list[str]]] = []
    for line in delta_lines:
        match = _HUNK.match(line)
        if match:
            start = int(match.group(3)) - (0 if match.group(4) == "0" else 1)
            hunks.append((start, [], []))
        elif hunks and not line.startswith("\\"):
            kind, content = line[:1], line[1:]
            if kind in " +":
                hunks[-1][1].append(content)
            if kind in " -":
                hunks[-1][2].append(content)
    for start, new, old in reversed(hunks):
        if lines[start : start + len(new)] != new:
            raise DeltaError(f"{label} does not apply at line {start + 1}: the head file changed without a revision")
        lines[start : start + len(new)] = old
    return "\n".join(lines)


def function_source(name: str, revision: str | None = None) -> str:
    """The definition of function ``name`` as of ``revision`` (``None``: the head), as a SQL template.

    Starts from ``sql/schema/functions/<name>.sql`` and reverse-applies the
    function diffs of every revision newer than ``revision``, newest first.
    Raises ``FileNotFoundError`` when the head has no such function and
    :class:`DeltaError` when a diff does not apply.
    """
    head = FUNCTIONS_DIR / f"{name}.sql"
    text = head.read_text(encoding="utf-8") if head.is_file() else ""
    if revision is None and text:
        return text
    for newer, stem in reversed(list(revisions().items())):
        if revision is None or newer <= revision:
            break
        delta_path = MIGRATIONS_SQL_DIR / f"{stem}.functions.diff"
        if delta_path.is_file():
            delta = _function_deltas(delta_path.read_text(encoding="utf-8")).get(name)
            if delta:
                text = reverse_apply(text, delta, f"{delta_path.name} ({name})")
    if not text.strip():
        raise FileNotFoundError(f"no function {name} at revision {revision or 'head'}")
    return text


_CREATE = re.compile(r"^create (?:or replace )?function \{\{schema\}\}\.(\w+)\(", re.M)


def released_definition(revision: str, name: str) -> str:
    """The CREATE statement of ``name`` as written in released revision file ``revision`` (its last one there).

    Returned as ``create or replace``, so it can restore a function that exists.
    For revisions 0001-0006, whose files carry function bodies. The statement
    ends at its closing dollar quote, ``end;`` of a ``begin atomic`` body, or
    the ``;`` of a ``return`` body. Raises ``LookupError`` when the file has none.
    """
    lines = (MIGRATIONS_SQL_DIR / f"{revisions()[revision]}.sql").read_text(encoding="utf-8").split("\n")
    starts = [i for i, line in enumerate(lines) if (m := _CREATE.match(line)) and m.group(1) == name]
    if not starts:
        raise LookupError(f"revision {revision} does not define {name}")
    end = start = starts[-1]
    dollar = None
    for end in range(start, len(lines)):
        line = lines[end]
        if dollar is None:
            opening = re.match(r"^as (\$\w*\$)", line)
            if opening:
                dollar = opening.group(1)
            elif line == "begin atomic":
                dollar = "end;"
            elif re.match(r"^return\b", line) and line.rstrip().endswith(";"):
                break
            elif re.match(r"^return\b", line):
                dollar = ";"
        elif (dollar == ";" and line.rstrip().endswith(";")) or (dollar != ";" and line.startswith(dollar) and end > start):
            break
    statement = "\n".join(lines[start : end + 1]) + "\n"
    return re.sub(r"^create (or replace )?function", "create or replace function", statement)


def expand(path: Path, revision: str | None) -> str:
    """Read a SQL template and replace its ``\\ir`` and ``\\history`` lines.

    ``\\ir <relative path>`` includes that file (recursively); a file under
    ``sql/schema/functions`` is included as of ``revision`` (see
    :func:`function_source`). ``\\history NNNN <function>`` becomes
    :func:`released_definition`. Placeholders are left for
    :func:`prism_memory.schema.render`.
    """
    text = path.read_text(encoding="utf-8")

    def include(match: re.Match[str]) -> str:
        target = (path.parent / match.group(1)).resolve()
        if target.parent == FUNCTIONS_DIR.resolve():
            try:
                return function_source(target.stem, revision)
            except FileNotFoundError:
                if target.is_file():  # a later revision added it: not part of this one
                    return ""
                raise
        return expand(target, revision)

    text = _INCLUDE.sub(include, text)
    return _HISTORY.sub(lambda match: released_definition(match.group(1), match.group(2)), text)


def revision_template(revision: str, part: str) -> str | None:
    """The SQL template of one part of a revision, expanded, or ``None`` when that file does not exist.

    ``part``: ``"upgrade"`` (``NNNN_<name>.sql``, includes resolved at
    ``revision``), ``"downgrade"`` (``.down.sql``, includes resolved at the
    revision before), ``"vector_search"`` or ``"vector_search_down"``.
    """
    stem = revisions()[revision]
    filename, at = {
        "upgrade": (f"{stem}.sql", revision),
        "downgrade": (f"{stem}.down.sql", _previous(revision)),
        "vector_search": (f"{revision}_vector_search.sql", revision),
        "vector_search_down": (f"{revision}_vector_search.down.sql", _previous(revision)),
    }[part]
    path = MIGRATIONS_SQL_DIR / filename
    return expand(path, at) if path.is_file() else None


def _released_head(path: Path, digest: str) -> str:
    """The content of head file ``path`` whose SHA-256 is ``digest``: the newest such version in git history."""
    top = Path(_git(SQL_DIR, "rev-parse", "--show-toplevel").strip())
    relative = path.resolve().relative_to(top.resolve()).as_posix()
    for commit in _git(top, "rev-list", "HEAD", "--", relative).split():
        content = _git(top, "show", f"{commit}:{relative}")
        if hashlib.sha256(content.encode("utf-8")).hexdigest() == digest:
            return content
    raise LookupError(f"no commit holds the released {path.name} (sha256 {digest}); was it committed?")


def _git(directory: Path, *arguments: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(directory), *arguments], check=True, capture_output=True, text=True).stdout


def new_revision(name: str) -> list[Path]:
    """Cut schema revision N+1 from the head files edited since revision N (a maintainer's command; needs git).

    Writes ``sql/migrations/NNNN_<name>.functions.diff`` (each changed, added
    or removed function file, from its released version, found in git history
    by the digest in ``functions.sha256``, to the head), the revision's
    ``.sql`` and ``.down.sql`` (the ``\\ir`` lines for those functions, and
    EXECUTE revoked from PUBLIC when one is new; table changes and the
    argument types of a ``drop function`` are left to write by hand where the
    files say), its Alembic module, and the new
    ``functions.sha256``. Returns the files written. Raises ``ValueError``
    for a bad name.
    """
    import difflib

    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name == "vector_search":
        raise ValueError(f"revision name {name!r}: use lower-case letters, digits and '_'")
    previous = list(revisions())[-1]
    revision = f"{int(previous) + 1:04d}"
    stem = f"{revision}_{name}"
    released, head = read_function_lock(), head_function_digests()
    delta, changed, added, removed = [], [], [], []
    for key in sorted(released.keys() | head.keys()):
        if released.get(key) == head.get(key):
            continue
        path = SCHEMA_DIR / key
        old = _released_head(path, released[key]).splitlines(keepends=True) if key in released else []
        new = path.read_text(encoding="utf-8").splitlines(keepends=True) if key in head else []
        before = f"a/{key}" if old else "/dev/null"
        after = f"b/{key}" if new else "/dev/null"
        delta.extend(difflib.unified_diff(old, new, before, after))
        (changed if old and new else added if new else removed).append(Path(key).stem)
    include = "\\ir ../schema/functions/{}.sql\n".format
    upgrade = [f"-- prism-memory schema revision {revision}: {name}. Say what changes and why.\n\n{{{{pin_search_path}}}}\n\n"]
    upgrade += [include(function) for function in changed + added]
    upgrade += [f"drop function {{{{schema}}}}.{function}(/* its argument types */);\n" for function in removed]
    upgrade += [_REVOKE_FROM_PUBLIC] if added else []
    downgrade = [f"-- Reverts revision {revision}.\n\n{{{{pin_search_path}}}}\n\n"]
    downgrade += [f"drop function {{{{schema}}}}.{function}(/* its argument types */);\n" for function in added]
    downgrade += [include(function) for function in changed + removed]
    written = {
        MIGRATIONS_SQL_DIR / f"{stem}.sql": "".join(upgrade) + "\nreset search_path;\n",
        MIGRATIONS_SQL_DIR / f"{stem}.down.sql": "".join(downgrade) + "\nreset search_path;\n",
        ALEMBIC_DIR / "versions" / f"{stem}.py": _ALEMBIC_MODULE.format(name=name, revision=revision, previous=previous),
        FUNCTION_LOCK: "".join(f"{digest}  {key}\n" for key, digest in sorted(head.items())),
    }
    if delta:
        written[MIGRATIONS_SQL_DIR / f"{stem}.functions.diff"] = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in delta)
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
    return list(written)


#: PostgreSQL lets PUBLIC execute a new function: a revision that adds one takes that back.
_REVOKE_FROM_PUBLIC = (
    "revoke execute on all functions in schema {{schema}} from public;\n"
    "grant execute on function {{schema}}.install_info_v1() to public;\n"
)

_ALEMBIC_MODULE = '''"""{name}: say what this revision changes.

Revision ID: {revision}
Revises: {previous}
"""

from prism_memory.schema import run_revision

revision = "{revision}"
down_revision = "{previous}"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    run_revision(revision, schema_config, "upgrade")


def downgrade(schema_config) -> None:
    run_revision(revision, schema_config, "downgrade")
'''


def main(argv: list[str] | None = None) -> int:
    """``python -m prism_memory.sql_source new-revision NAME``: see :func:`new_revision`."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m prism_memory.sql_source", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cut = commands.add_parser("new-revision", help="cut the next schema revision from the edited head files")
    cut.add_argument("name", help="the revision's name, e.g. citus_safe")
    arguments = parser.parse_args(argv)
    for path in new_revision(arguments.name):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
