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
  earlier includes it); a file it removes is restored from its diff, and its
  name is never used again.
- ``sql/migrations/schema.sha256`` holds the SHA-256 of every head file as of
  the newest revision, so a head edit that no revision ships yet is caught by
  a test rather than silently rewriting history.

A revision's upgrade file resolves its includes as of its own revision, its
downgrade file as of the revision before it: the definitions to go back to.

Every file is read as bytes decoded as UTF-8 and split into lines at "\\n"
only, each line keeping its ending: a carriage return, a form feed or a
U+2028 is part of a line's text, and a last line without "\\n" stays so.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import NamedTuple

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
#: The line a unified diff writes after a line that has no line ending.
_NO_NEWLINE = "\\ No newline at end of file"


class DeltaError(RuntimeError):
    """A revision's schema diff does not apply to the head file: the head was edited without a revision."""


def _read(path: Path) -> str:
    """A file's text: its bytes decoded as UTF-8 (no newline translation)."""
    return path.read_bytes().decode("utf-8")


def _lines(text: str) -> list[str]:
    """``text`` split after each "\\n" (and nowhere else), every line keeping its ending."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return lines + [parts[-1]] if parts[-1] else lines


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
    for line in _read(SCHEMA_LOCK).split("\n"):
        if line.strip():
            digest, name = line.split(maxsplit=1)
            lock[name.lstrip("*")] = digest
    return lock


class _FileDiff(NamedTuple):
    """One file's part of a revision's schema diff."""

    hunks: list[str]  # the hunk headers and lines, without their "\n"
    created: bool  # the old side is /dev/null: the revision added the file
    deleted: bool  # the new side is /dev/null: the revision removed the file


def _file_diffs(delta: str) -> dict[str, _FileDiff]:
    """Split a multi-file unified diff into ``{path relative to sql/schema: its part}``.

    Hunks are read by their line counts (a removed SQL comment starts with
    ``---`` too), each with the ``\\ No newline at end of file`` markers that
    follow its lines. A file is named by its ``---`` side, or its ``+++`` side
    for a created file; ``a/`` and ``b/`` prefixes are dropped, other header
    lines ignored.
    """
    files: dict[str, _FileDiff] = {}
    lines = delta.split("\n")
    index, old_path, current = 0, None, None
    while index < len(lines):
        line = lines[index]
        hunk = _HUNK.fullmatch(line)
        if line.startswith("--- "):
            old_path = line[4:].split("\t")[0].strip()
        elif line.startswith("+++ ") and old_path is not None:
            new_path = line[4:].split("\t")[0].strip()
            path = re.sub(r"^[ab]/", "", old_path if old_path != "/dev/null" else new_path)
            current = files.setdefault(path, _FileDiff([], old_path == "/dev/null", new_path == "/dev/null")).hunks
        elif hunk and current is not None:
            current.append(line)
            old_left, new_left = int(hunk.group(2) or 1), int(hunk.group(4) or 1)
            while old_left or new_left or lines[index + 1 : index + 2] == [_NO_NEWLINE]:
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

    ``hunk_lines`` are the diff's hunk headers and lines without their
    "\\n"; a ``\\ No newline at end of file`` marker takes the ending off
    the line before it. Every hunk must match ``text`` exactly where the diff
    says; raises :class:`DeltaError` naming ``label`` otherwise.
    """
    lines = _lines(text)
    hunks: list[tuple[int, list[str], list[str]]] = []
    kind = ""
    for line in hunk_lines:
        match = _HUNK.fullmatch(line)
        if match:
            hunks.append((int(match.group(3)) - (match.group(4) != "0"), [], []))
        elif hunks and line.startswith("\\"):
            _, new, old = hunks[-1]
            if kind in (" ", "+"):
                new[-1] = new[-1].removesuffix("\n")
            if kind in (" ", "-"):
                old[-1] = old[-1].removesuffix("\n")
        elif hunks:
            kind, content = line[:1], line[1:] + "\n"
            if kind in (" ", "+"):
                hunks[-1][1].append(content)
            if kind in (" ", "-"):
                hunks[-1][2].append(content)
    for start, new, old in reversed(hunks):
        if lines[start : start + len(new)] != new:
            raise DeltaError(f"{label} does not apply at line {start + 1}: the head file changed without a revision")
        lines[start : start + len(new)] = old
    return "".join(lines)


def _undo(text: str | None, diff: _FileDiff, label: str) -> str | None:
    """One file as it was before a revision: ``text`` is the file after it (``None``: absent), ``diff`` its part.

    Raises :class:`DeltaError` when the diff removes the file but ``text``
    exists (the name was used again), or changes a file that is absent.
    """
    if diff.deleted and text is not None:
        raise DeltaError(f"{label} removes the file, but it exists after that revision: a removed name is never reused")
    if not diff.deleted and text is None:
        raise DeltaError(f"{label} changes the file, but it does not exist after that revision")
    old = reverse_apply(text or "", diff.hunks, label)
    return None if diff.created else old


def _stored_diffs(stem: str) -> dict[str, _FileDiff]:
    """The per-file parts of revision ``stem``'s schema diff (empty when it has none)."""
    path = MIGRATIONS_SQL_DIR / f"{stem}.schema.diff"
    return _file_diffs(_read(path)) if path.is_file() else {}


def schema_source(relative: str, revision: str | None = None) -> str:
    """The text of head file ``sql/schema/<relative>`` as of ``revision`` (``None``: the head), a SQL template.

    Reverse-applies the schema diffs of every revision newer than
    ``revision``, newest first. Raises ``FileNotFoundError`` when the file
    does not exist then (or at no revision), and :class:`DeltaError` when a
    diff does not apply.
    """
    path = SCHEMA_DIR / relative
    text = _read(path) if path.is_file() else None
    for newer, stem in reversed(list(revisions().items()) if revision else []):
        if newer <= revision:
            break
        diff = _stored_diffs(stem).get(relative)
        if diff:
            text = _undo(text, diff, f"{stem}.schema.diff ({relative})")
    if text is None:
        raise FileNotFoundError(f"sql/schema/{relative} does not exist at revision {revision or 'head'}")
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

    text = _read(path)
    return _INCLUDE.sub(lambda match: included((path.parent / match.group(1)).resolve()), text)


#: One lexical unit of a SQL script that a semicolon inside it does not end: a comment, a quoted
#: string or identifier (doubled quotes inside), a dollar-quoted body (``$$ ... $$``, ``$tag$ ... $tag$``),
#: or a word that opens or closes a block of a ``BEGIN ATOMIC`` body.
_SQL_UNIT = re.compile(
    r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|(\$[A-Za-z_]*\$).*?\1|\b(?:begin|case|end)\b|;",
    re.S | re.I)
_COMMENTS = r"(?:\s|--[^\n]*|/\*.*?\*/)*"
_ROUTINE = re.compile(_COMMENTS + r"create\s+(?:or\s+replace\s+)?(?:function|procedure)\b.*", re.S | re.I)
_ONLY_COMMENTS = re.compile(_COMMENTS, re.S)


def split_statements(script: str) -> list[str]:
    """The statements of a rendered SQL script (this package's own), in order, each without its ``;``.

    A semicolon ends a statement unless it is inside a comment, a quoted string
    or identifier, a dollar-quoted body, or (as psql counts them) the
    ``BEGIN ... END`` and ``CASE ... END`` blocks of a function's ``BEGIN
    ATOMIC`` body; pieces holding only comments and white space are left out.
    The migrations send a revision one statement at a time because Citus,
    given several statements in one query string, sends the whole string to
    the workers as the text of each table's DDL, which they refuse ("cannot
    insert multiple commands into a prepared statement").
    """
    statements, start, depth = [], 0, 0
    for unit in _SQL_UNIT.finditer(script):
        word = unit.group().lower()
        if word in ("begin", "case") and _ROUTINE.fullmatch(script, start, unit.start()):
            depth += 1
        elif word == "end" and depth:
            depth -= 1
        elif word == ";" and not depth:
            statements.append(script[start:unit.start()])
            start = unit.end()
    statements.append(script[start:])
    return [statement for statement in statements if not _ONLY_COMMENTS.fullmatch(statement)]


def revision_template(revision: str, part: str) -> str | None:
    """One part of a revision, expanded, or ``None`` when that file does not exist.

    ``part``: ``"upgrade"`` (``NNNN_<name>.sql``, includes as of
    ``revision``), ``"downgrade"`` (``.down.sql``, includes as of the
    revision before), ``"vector_search"`` or ``"vector_search_down"``.
    Raises ``KeyError`` for an unknown revision or part.
    """
    stems = revisions()
    names = list(stems)
    previous = names[names.index(revision) - 1] if names.index(revision) else None
    stem = stems[revision]
    filename, at = {
        "upgrade": (f"{stem}.sql", revision),
        "downgrade": (f"{stem}.down.sql", previous),
        "vector_search": (f"{revision}_vector_search.sql", revision),
        "vector_search_down": (f"{revision}_vector_search.down.sql", previous),
    }[part]
    path = MIGRATIONS_SQL_DIR / filename
    return expand(path, at) if path.is_file() else None


def _git(directory: Path, *arguments: str) -> bytes:
    """The output of a git command run in ``directory``, as bytes (no newline translation)."""
    import subprocess

    return subprocess.run(["git", "-C", str(directory), *arguments], check=True, capture_output=True).stdout


def _released_text(relative: str, digest: str) -> str:
    """The released content of head file ``relative``: the newest version in git history whose SHA-256 is ``digest``."""
    top = Path(_git(SCHEMA_DIR, "rev-parse", "--show-toplevel").decode("utf-8").strip())
    path = (SCHEMA_DIR / relative).resolve().relative_to(top.resolve()).as_posix()
    # The commits that added, changed or renamed the file (not those that deleted it), newest first; merge commits
    # too (-m: against each parent), since a merge of two branches that both edited the file is its only holder.
    commits = _git(top, "log", "-m", "--format=%H", "--diff-filter=ACMR", "HEAD", "--", path).decode("ascii").split()
    for commit in dict.fromkeys(commits):
        content = _git(top, "show", f"{commit}:{path}")
        if hashlib.sha256(content).hexdigest() == digest:
            return content.decode("utf-8")
    raise LookupError(f"no commit holds the released sql/schema/{relative} (sha256 {digest}); commit it first")


def _texts_before(stem: str) -> dict[str, str]:
    """Every head file as of the revision before ``stem``, the newest one: ``{relative path: text}``.

    A file as of ``stem`` is the head file while its digest is still the
    lock's, else the version in git history with the lock's digest; undoing
    ``stem``'s diff gives it as of the revision before. The functions
    ``stem``'s downgrade drops are left out: ``stem`` added them (a revision
    ships no diff for a file it adds).
    """
    lock, head, diffs = read_lock(), head_digests(), _stored_diffs(stem)
    down = _read(MIGRATIONS_SQL_DIR / f"{stem}.down.sql")
    added = {f"functions/{name}.sql" for name in re.findall(r"^drop function \{\{schema\}\}\.(\w+)\(", down, re.M)}
    texts = {}
    for relative in sorted((lock.keys() | diffs.keys()) - added):
        text = None
        if relative in lock:
            unchanged = head.get(relative) == lock[relative]
            text = _read(SCHEMA_DIR / relative) if unchanged else _released_text(relative, lock[relative])
        if relative in diffs:
            text = _undo(text, diffs[relative], f"{stem}.schema.diff ({relative})")
        if text is not None:
            texts[relative] = text
    return texts


#: PostgreSQL lets PUBLIC execute a new function (a per-schema default cannot take back that global
#: one): a revision that creates a function, on upgrade or on downgrade, takes it back. It comes after
#: the search path is reset: on a distributed install Citus sends the revoke to every node naming each
#: function's argument types as the search path shows them, and a worker cannot resolve this schema's
#: type named without its schema (``recall_probe_v1[]``, an argument of recall_top_v1).
_REVOKE_FROM_PUBLIC = (
    "revoke execute on all functions in schema {{schema}} from public;\n"
    "grant execute on function {{schema}}.install_info_v1() to public;\n"
)


def new_revision(name: str, amend: bool = False) -> list[Path]:
    """Cut schema revision N+1 from the head files edited since revision N (a maintainer's command).

    Compares the head files with the digests of revision N: ``schema.sha256``,
    whose files' released texts it reads from git history (by digest). With
    ``amend=True`` it re-cuts the newest revision instead, which must not be
    released yet: the head files as of the revision before it are computed
    from its diff and ``schema.sha256`` (git is read only for a file edited
    since it was cut), its files are removed, and it is cut again from the
    head (its hand-written parts, such as table changes, must be written
    again).

    Writes ``sql/migrations/NNNN_<name>.schema.diff`` (released to head, for
    changed and removed files); the revision's ``.sql`` and ``.down.sql`` with
    an ``\\ir`` line for each changed, added or removed function, EXECUTE
    revoked from PUBLIC again wherever a function is created (added on
    upgrade, restored on downgrade), and ``drop function`` lines whose
    argument types are left to fill in (as are table changes); its Alembic
    module; and the new ``schema.sha256``. Before writing anything it checks
    that its diff turns every head file it touches back into the released
    text. Returns the files written.

    Raises ``ValueError`` for a bad name, when no head file changed, or when
    a file is added under a name an earlier revision removed (a new function
    takes the next ``_vN``); ``LookupError`` when a released text is not in
    git history; :class:`DeltaError` when its own diff would not restore a
    released text (nothing is written then).
    """
    import difflib

    from mako.template import Template

    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name == "vector_search":
        raise ValueError(f"revision name {name!r}: use lower-case letters, digits and '_'")
    chain = list(revisions().items())
    if amend:
        (previous, _), (revision, amended) = chain[-2:]
        texts = _texts_before(amended)
        released = {relative: hashlib.sha256(text.encode("utf-8")).hexdigest() for relative, text in texts.items()}
        old_files = [MIGRATIONS_SQL_DIR / f"{amended}{suffix}" for suffix in (".sql", ".down.sql", ".schema.diff")]
        old_files.append(ALEMBIC_DIR / "versions" / f"{amended}.py")
    else:
        previous, _ = chain[-1]
        revision = f"{int(previous) + 1:04d}"
        texts, released, old_files = {}, read_lock(), []
    stem = f"{revision}_{name}"
    head = head_digests()
    touched = sorted(relative for relative in released.keys() | head.keys() if released.get(relative) != head.get(relative))
    if not touched:
        raise ValueError(f"no head file changed since revision {previous}: there is nothing to cut")
    removed_before = {relative for number, earlier in chain if number <= previous
                      for relative, diff in _stored_diffs(earlier).items() if diff.deleted}
    delta: list[str] = []
    changed, added, removed, restored = [], [], [], {}
    for relative in touched:
        function = relative[len("functions/") : -len(".sql")] if relative.startswith("functions/") else None
        if relative not in released:
            if relative in removed_before:
                raise ValueError(f"sql/schema/{relative} was removed by an earlier revision: a name is never "
                                 "used again (give a new function the next _vN)")
            added += [function] if function else []
            continue
        restored[relative] = texts[relative] if amend else _released_text(relative, released[relative])
        new = _lines(_read(SCHEMA_DIR / relative)) if relative in head else []
        delta += difflib.unified_diff(_lines(restored[relative]), new, f"a/{relative}", f"b/{relative}" if new else "/dev/null")
        if function:
            (changed if new else removed).append(function)
    delta_text = "".join(line if line.endswith("\n") else f"{line}\n{_NO_NEWLINE}\n" for line in delta)
    shipped = _file_diffs(delta_text)
    for relative, text in restored.items():
        after = _read(SCHEMA_DIR / relative) if relative in head else None
        if relative not in shipped or _undo(after, shipped[relative], relative) != text:
            raise DeltaError(f"the diff cut for sql/schema/{relative} does not restore its released text; nothing written")

    include = "\\ir ../schema/functions/{}.sql\n".format
    drop = "drop function {{{{schema}}}}.{}(/* its argument types */);\n".format
    upgrade = [f"-- prism-memory schema revision {revision}: {name}. Say what changes and why.\n\n{{{{pin_search_path}}}}\n\n"]
    # install_info_v1 reports the revision ({{schema_version}}): every revision re-creates it.
    upgrade += [include("install_info_v1")]
    upgrade += [include(function) for function in added + changed if function != "install_info_v1"]
    upgrade += [drop(function) for function in removed]
    upgrade += ["\nreset search_path;\n"] + ([_REVOKE_FROM_PUBLIC] if added else [])
    downgrade = [f"-- Reverts revision {revision}.\n\n{{{{pin_search_path}}}}\n\n"]
    downgrade += [include("install_info_v1")] + [drop(function) for function in added]
    downgrade += [include(function) for function in changed + removed if function != "install_info_v1"]
    downgrade += ["\nreset search_path;\n"] + ([_REVOKE_FROM_PUBLIC] if removed else [])
    written = {
        MIGRATIONS_SQL_DIR / f"{stem}.sql": "".join(upgrade),
        MIGRATIONS_SQL_DIR / f"{stem}.down.sql": "".join(downgrade),
        ALEMBIC_DIR / "versions" / f"{stem}.py": Template(filename=str(ALEMBIC_DIR / "script.py.mako")).render(
            message=f"{name}: say what this revision changes.", up_revision=revision, down_revision=previous),
        SCHEMA_LOCK: "".join(f"{digest}  {relative}\n" for relative, digest in sorted(head.items())),
    }
    if delta_text:
        written[MIGRATIONS_SQL_DIR / f"{stem}.schema.diff"] = delta_text
    for path in old_files:
        path.unlink(missing_ok=True)
    for path, text in written.items():
        path.write_bytes(text.encode("utf-8"))
    return list(written)
