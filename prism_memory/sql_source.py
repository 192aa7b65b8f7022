"""The SQL source: the readable head schema, the schema revisions, and how both render.

Layout (docs/architecture.md walks through it):

- ``sql/schema/`` is the database at head: ``install.sql`` lists the install
  order, ``tables.sql`` holds the tables, and ``functions/<name>.sql`` one live
  function each, with its attributes in its CREATE statement. Files include
  each other with ``\\ir <path>`` lines (psql's "include relative").
- ``sql/migrations/NNNN_<name>.sql`` (and ``.down.sql``) are the revisions
  Alembic applies. They write their structural changes (tables, grants) out,
  and name each function they (re)create with ``\\ir
  ../schema/functions/<name>.sql`` instead of copying its body.
- A revision must keep installing what it installed when it was released,
  while the head files move on. So a revision that changes head files ships
  the change as a unified diff, ``NNNN_<name>.schema.diff`` (old to new, paths
  relative to ``sql/schema``). A head file as of revision N is the head file
  with the diffs of every later revision applied in reverse, newest first: the
  reverse deltas of RCS. The head is stored once, in full; the history only as
  the lines that changed. A file a revision creates needs no diff (nothing
  earlier includes it); a file it removes is restored from its diff.
- ``sql/migrations/schema.sha256`` holds the SHA-256 of every head file as of
  the newest revision, so a head edit that no revision ships yet is caught by
  a test rather than silently rewriting history.

A revision's upgrade file resolves its includes as of its own revision, its
downgrade file as of the revision before it: the definitions to go back to.
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
    "SCHEMA_LOCK",
    "SQL_DIR",
    "DeltaError",
    "expand",
    "head_digests",
    "head_function_names",
    "new_revision",
    "read_lock",
    "reverse_apply",
    "revision_template",
    "revisions",
    "schema_source",
]


def _data_dir(installed: str, source: str) -> Path:
    """A packaged data folder: ``prism_memory/<installed>`` in a wheel, ``<repo>/<source>`` in a checkout."""
    package = Path(__file__).resolve().parent
    return package / installed if (package / installed).is_dir() else package.parent / source


SQL_DIR = _data_dir("sql", "sql")
SCHEMA_DIR = SQL_DIR / "schema"
FUNCTIONS_DIR = SCHEMA_DIR / "functions"
MIGRATIONS_SQL_DIR = SQL_DIR / "migrations"
SCHEMA_LOCK = MIGRATIONS_SQL_DIR / "schema.sha256"
#: The Alembic environment and its ``versions`` modules (one per revision).
ALEMBIC_DIR = _data_dir("migrations", "alembic")

_REVISION_FILE = re.compile(r"(\d{4})_(\w+)\.sql")
_INCLUDE = re.compile(r"^\\ir (\S+)[ \t]*$", re.M)
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@.*")


class DeltaError(RuntimeError):
    """A revision's schema diff does not apply to the head file: the head was edited without a revision."""


def revisions() -> dict[str, str]:
    """Every schema revision in order: ``{"0001": "0001_initial", ...}`` (from the files in sql/migrations)."""
    found = {}
    for path in sorted(MIGRATIONS_SQL_DIR.glob("*.sql")):
        match = _REVISION_FILE.fullmatch(path.name)
        if match and match.group(2) != "vector_search":
            found[match.group(1)] = path.stem
    return found


def head_function_names() -> list[str]:
    """The name of every live function (one file each in ``sql/schema/functions``), sorted."""
    return sorted(path.stem for path in FUNCTIONS_DIR.glob("*.sql"))


def head_digests() -> dict[str, str]:
    """SHA-256 (hex) of every head file, keyed by its path relative to ``sql/schema``."""
    return {
        path.relative_to(SCHEMA_DIR).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(SCHEMA_DIR.rglob("*.sql"))
    }


def read_lock() -> dict[str, str]:
    """The digests of the head files as of the newest revision, from ``schema.sha256`` (``sha256sum`` format)."""
    lock = {}
    for line in SCHEMA_LOCK.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            lock[name.lstrip("*")] = digest
    return lock


def _file_diffs(delta: str) -> dict[str, list[str]]:
    """Split a multi-file unified diff into ``{path relative to sql/schema: its hunk lines}``.

    Hunks are read by their line counts (a removed SQL comment starts with
    ``---`` too). A file is named by its ``---`` side, or its ``+++`` side for a
    created file; ``a/`` and ``b/`` prefixes are dropped, other header lines
    ignored.
    """
    files: dict[str, list[str]] = {}
    lines = delta.split("\n")
    index, old_path, current = 0, None, None
    while index < len(lines):
        line = lines[index]
        hunk = _HUNK.fullmatch(line)
        if line.startswith("--- "):
            old_path = line[4:].split("\t")[0].strip()
        elif line.startswith("+++ ") and old_path is not None:
            path = old_path if old_path != "/dev/null" else line[4:].split("\t")[0].strip()
            current = files.setdefault(re.sub(r"^[ab]/", "", path), [])
        elif hunk and current is not None:
            current.append(line)
            old_left, new_left = int(hunk.group(2) or 1), int(hunk.group(4) or 1)
            while old_left or new_left:
                index += 1
                body = lines[index] or " "  # a blank context line written without its leading space
                current.append(body)
                if not body.startswith("\\"):
                    old_left -= body[:1] in " -"
                    new_left -= body[:1] in " +"
        index += 1
    return files


def reverse_apply(text: str, hunk_lines: list[str], label: str) -> str:
    """Undo one file's unified diff: ``text`` is the new side, the result is the old side.

    Every hunk must match ``text`` exactly where the diff says; raises
    :class:`DeltaError` naming ``label`` otherwise.
    """
    lines = text.split("\n")
    hunks: list[tuple[int, list[str], list[str]]] = []
    for line in hunk_lines:
        match = _HUNK.fullmatch(line)
        if match:
            hunks.append((int(match.group(3)) - (match.group(4) != "0"), [], []))
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


def schema_source(relative: str, revision: str | None = None) -> str:
    """The text of head file ``sql/schema/<relative>`` as of ``revision`` (``None``: the head), a SQL template.

    Reverse-applies the schema diffs of every revision newer than
    ``revision``, newest first. Raises ``FileNotFoundError`` when the file
    exists neither at the head nor in a diff, and :class:`DeltaError` when a
    diff does not apply.
    """
    path = SCHEMA_DIR / relative
    text = path.read_text(encoding="utf-8") if path.is_file() else None
    for newer, stem in reversed(list(revisions().items()) if revision else []):
        if newer <= revision:
            break
        delta_path = MIGRATIONS_SQL_DIR / f"{stem}.schema.diff"
        hunks = _file_diffs(delta_path.read_text(encoding="utf-8")).get(relative) if delta_path.is_file() else None
        if hunks:
            text = reverse_apply(text or "", hunks, f"{delta_path.name} ({relative})")
    if text is None:
        raise FileNotFoundError(f"sql/schema/{relative} exists at no revision")
    return text


def expand(path: Path, revision: str | None) -> str:
    """Read a SQL template and replace each ``\\ir <relative path>`` line by that file, recursively.

    A file under ``sql/schema`` is included as of ``revision`` (see
    :func:`schema_source`); ``path`` itself is read as it is. Placeholders are
    left for :func:`prism_memory.schema.render`.
    """

    def included(target: Path) -> str:
        try:
            relative = target.relative_to(SCHEMA_DIR.resolve()).as_posix()
        except ValueError:
            return expand(target, revision)
        return _INCLUDE.sub(lambda match: included((target.parent / match.group(1)).resolve()),
                            schema_source(relative, revision))

    text = path.read_text(encoding="utf-8")
    return _INCLUDE.sub(lambda match: included((path.parent / match.group(1)).resolve()), text)


def revision_template(revision: str, part: str) -> str | None:
    """One part of a revision, expanded, or ``None`` when that file does not exist.

    ``part``: ``"upgrade"`` (``NNNN_<name>.sql``, includes as of
    ``revision``), ``"downgrade"`` (``.down.sql``, includes as of the
    revision before), ``"vector_search"`` or ``"vector_search_down"``.
    Raises ``KeyError`` for an unknown revision or part.
    """
    names = list(revisions())
    previous = names[names.index(revision) - 1] if names.index(revision) else None
    stem = revisions()[revision]
    filename, at = {
        "upgrade": (f"{stem}.sql", revision),
        "downgrade": (f"{stem}.down.sql", previous),
        "vector_search": (f"{revision}_vector_search.sql", revision),
        "vector_search_down": (f"{revision}_vector_search.down.sql", previous),
    }[part]
    path = MIGRATIONS_SQL_DIR / filename
    return expand(path, at) if path.is_file() else None


def _git(directory: Path, *arguments: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(directory), *arguments], check=True, capture_output=True, text=True).stdout


def _released_text(relative: str, digest: str) -> str:
    """The released content of head file ``relative``: the newest version in git history whose SHA-256 is ``digest``."""
    top = Path(_git(SCHEMA_DIR, "rev-parse", "--show-toplevel").strip())
    path = (SCHEMA_DIR / relative).resolve().relative_to(top.resolve()).as_posix()
    for commit in _git(top, "rev-list", "HEAD", "--", path).split():
        content = _git(top, "show", f"{commit}:{path}")
        if hashlib.sha256(content.encode("utf-8")).hexdigest() == digest:
            return content
    raise LookupError(f"no commit holds the released sql/schema/{relative} (sha256 {digest}); commit it first")


#: PostgreSQL lets PUBLIC execute a new function: a revision that adds one takes that back.
_REVOKE_FROM_PUBLIC = (
    "revoke execute on all functions in schema {{schema}} from public;\n"
    "grant execute on function {{schema}}.install_info_v1() to public;\n"
)



def new_revision(name: str) -> list[Path]:
    """Cut schema revision N+1 from the head files edited since revision N (a maintainer's command; needs git).

    Finds the head files whose digest differs from ``schema.sha256``, reads
    each one's released version from git history (by that digest), and
    writes: ``sql/migrations/NNNN_<name>.schema.diff`` (released to head, for
    changed and removed files); the revision's ``.sql`` and ``.down.sql`` with
    an ``\\ir`` line for each changed, added or removed function, EXECUTE
    revoked from PUBLIC when a function is new, and ``drop function`` lines
    whose argument types are left to fill in (as are table changes); its
    Alembic module; and the new ``schema.sha256``. Returns the files written.
    Raises ``ValueError`` for a bad name and ``LookupError`` when a released
    version is not in git history.
    """
    import difflib

    from mako.template import Template

    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name == "vector_search":
        raise ValueError(f"revision name {name!r}: use lower-case letters, digits and '_'")
    previous = list(revisions())[-1]
    revision = f"{int(previous) + 1:04d}"
    stem = f"{revision}_{name}"
    released, head = read_lock(), head_digests()
    delta: list[str] = []
    changed, added, removed = [], [], []
    for relative in sorted(released.keys() | head.keys()):
        if released.get(relative) == head.get(relative):
            continue
        function = relative[len("functions/") : -len(".sql")] if relative.startswith("functions/") else None
        if relative not in released:
            added += [function] if function else []
            continue
        old = _released_text(relative, released[relative]).splitlines(keepends=True)
        new = (SCHEMA_DIR / relative).read_text(encoding="utf-8").splitlines(keepends=True) if relative in head else []
        delta += difflib.unified_diff(old, new, f"a/{relative}", f"b/{relative}" if new else "/dev/null")
        if function:
            (changed if new else removed).append(function)
    include = "\\ir ../schema/functions/{}.sql\n".format
    drop = "drop function {{{{schema}}}}.{}(/* its argument types */);\n".format
    upgrade = [f"-- prism-memory schema revision {revision}: {name}. Say what changes and why.\n\n{{{{pin_search_path}}}}\n\n"]
    # install_info_v1 reports the revision ({{schema_version}}): every revision re-creates it.
    upgrade += [include("install_info_v1")]
    upgrade += [include(function) for function in added + changed if function != "install_info_v1"]
    upgrade += [drop(function) for function in removed]
    upgrade += [_REVOKE_FROM_PUBLIC] if added else []
    downgrade = [f"-- Reverts revision {revision}.\n\n{{{{pin_search_path}}}}\n\n"]
    downgrade += [include("install_info_v1")] + [drop(function) for function in added]
    downgrade += [include(function) for function in changed + removed if function != "install_info_v1"]
    written = {
        MIGRATIONS_SQL_DIR / f"{stem}.sql": "".join(upgrade) + "\nreset search_path;\n",
        MIGRATIONS_SQL_DIR / f"{stem}.down.sql": "".join(downgrade) + "\nreset search_path;\n",
        ALEMBIC_DIR / "versions" / f"{stem}.py": Template(filename=str(ALEMBIC_DIR / "script.py.mako")).render(
            message=f"{name}: say what this revision changes.", up_revision=revision, down_revision=previous),
        SCHEMA_LOCK: "".join(f"{digest}  {relative}\n" for relative, digest in sorted(head.items())),
    }
    if delta:
        written[MIGRATIONS_SQL_DIR / f"{stem}.schema.diff"] = "".join(
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in delta)
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
    return list(written)
