"""The SQL source files, read as they are: the head schema and the schema revisions.

Layout (docs/architecture.md walks through it):

- ``sql/schema/`` is the database at head: ``install.sql`` lists the install
  order, ``tables.sql`` holds the tables, and ``functions/<name>.sql`` one live
  function each, with its attributes in its CREATE statement. Head files
  include each other with ``\\ir <path>`` lines (psql's "include relative").
- ``sql/migrations/NNNN_<name>.sql`` (and ``.down.sql``) are the revisions
  Alembic applies, each the literal SQL it runs: every function a revision
  (re)creates is written out in full between a ``-- file <path>`` and an
  ``-- end of <path>`` line naming the head file it was cut from. A downgrade
  file holds the definitions it goes back to.

Every file is a template whose ``{{name}}`` placeholders
:func:`prism_memory.schema.render` fills. Files are read as bytes decoded as
UTF-8, with no newline translation.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = [
    "ALEMBIC_DIR",
    "FILE_BLOCK",
    "FUNCTIONS_DIR",
    "INCLUDE",
    "MIGRATIONS_SQL_DIR",
    "SCHEMA_DIR",
    "SQL_DIR",
    "expand_head",
    "file_blocks",
    "head_functions",
    "read",
    "revision_file",
    "revisions",
    "split_statements",
]


def _data_dir(installed: str, source: str) -> Path:
    """A packaged data folder: ``prism_memory/<installed>`` in a wheel, ``<repo>/<source>`` in a checkout.

    The repository keeps ``sql/`` and ``alembic/`` at its top level; pyproject.toml's
    ``[tool.setuptools.package-dir]`` ships them inside the wheel as ``prism_memory/sql`` and
    ``prism_memory/migrations``, where an installed package finds them.
    """
    package = Path(__file__).resolve().parent
    return package / installed if (package / installed).is_dir() else package.parent / source


SQL_DIR = _data_dir("sql", "sql")
SCHEMA_DIR = SQL_DIR / "schema"
FUNCTIONS_DIR = SCHEMA_DIR / "functions"
MIGRATIONS_SQL_DIR = SQL_DIR / "migrations"
#: The Alembic environment and its ``versions`` modules (one per revision).
ALEMBIC_DIR = _data_dir("migrations", "alembic")

_REVISION_FILE = re.compile(r"(\d{4})_(\w+)\.sql")
#: A head file's include line, ``\\ir <path relative to the file>`` (group 1: the path).
INCLUDE = re.compile(r"^\\ir (\S+)[ \t]*$", re.M)
#: A head file written out in a revision: ``-- file <path>``, its text (ending in a newline), ``-- end of <path>``.
#: Only a file that includes no other is matched (revision 0007 writes out the manifest functions.sql, whose
#: included function files are blocks of their own inside it).
FILE_BLOCK = re.compile(r"^-- file (\S+)\n((?:(?!-- file |-- end of ).*\n)*)-- end of \1\n", re.M)


def read(path: Path) -> str:
    """A file's text: its bytes decoded as UTF-8 (no newline translation)."""
    return path.read_bytes().decode("utf-8")


def revisions() -> dict[str, str]:
    """Every schema revision in order: ``{"0001": "0001_initial", ...}`` (from the files in sql/migrations)."""
    found = {}
    for path in sorted(MIGRATIONS_SQL_DIR.glob("*.sql")):
        match = _REVISION_FILE.fullmatch(path.name)
        if match and match.group(2) != "vector_search":
            found[match.group(1)] = path.stem
    return found


def revision_file(revision: str, part: str) -> str | None:
    """One part of a revision as written, or ``None`` when that file does not exist.

    ``part``: ``"upgrade"`` (``NNNN_<name>.sql``), ``"downgrade"``
    (``.down.sql``), ``"vector_search"`` (``NNNN_vector_search.sql``) or
    ``"vector_search_down"``. Raises ``KeyError`` for an unknown revision or part.
    """
    stem = revisions()[revision]
    filename = {
        "upgrade": f"{stem}.sql",
        "downgrade": f"{stem}.down.sql",
        "vector_search": f"{revision}_vector_search.sql",
        "vector_search_down": f"{revision}_vector_search.down.sql",
    }[part]
    path = MIGRATIONS_SQL_DIR / filename
    return read(path) if path.is_file() else None


def expand_head(path: Path) -> str:
    """A head file with each ``\\ir <relative path>`` line replaced by that file's text, recursively."""
    return INCLUDE.sub(lambda match: expand_head((path.parent / match.group(1)).resolve()), read(path))


def head_functions() -> dict[str, str]:
    """Every live function's head file, by name: ``{"recall_v3": text of sql/schema/functions/recall_v3.sql, ...}``."""
    return {path.stem: read(path) for path in sorted(FUNCTIONS_DIR.glob("*.sql"))}


def file_blocks(text: str) -> list[tuple[str, str]]:
    """The head files a revision writes out, in order: ``[(path relative to sql/schema, text), ...]``."""
    return [(match.group(1), match.group(2)) for match in FILE_BLOCK.finditer(text)]


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
