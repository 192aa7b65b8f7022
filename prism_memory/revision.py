"""``python -m prism_memory.revision NAME``: cut the next schema revision (a maintainer's command).

``--amend [NAME]`` re-cuts the newest one, ``--show NNNN`` prints what a revision runs, ``--release`` pins the
revisions not released yet.

The head (``sql/schema``) is edited; a revision is cut from it. A revision's
upgrade file writes out in full every function file that changed, was added,
or was removed since the revision before (``-- file functions/<name>.sql`` ...
``-- end of ...``), and its downgrade file the texts those replaced, taken from
the newest earlier revision that installed them. Nothing but the files
themselves is read: no history, no diffs.

A revision is *released* when its rendering is pinned in
``sql/migrations/released.txt`` (:func:`released`); nothing else is. A released
revision never changes: the tests check each pinned digest, and the cutter
refuses to amend one. ``--release`` pins every revision not pinned yet, in the
commit that hands them over (docs/architecture.md, "Released revisions").
"""

from __future__ import annotations

import argparse
import hashlib
import re
from pathlib import Path

from . import sql_source
from .schema import DEFAULT_SCHEMA, DEFAULT_TABLE, SchemaConfig, render_revision

#: The placeholder the cutter writes where a revision's author says what it changes; no revision may keep it.
PLACEHOLDER = "Say what this revision changes and why."

#: The configs a released revision's rendering is pinned for: each width rule (plain storage up to
#: PLAIN_STORAGE_MAX_DIMENSIONS, external above; an HNSW index up to HNSW_MAX_DIMENSIONS) and unpinned.
RENDERED_CONFIGS = (SchemaConfig(dimensions=16), SchemaConfig(), SchemaConfig(dimensions=1800), SchemaConfig(dimensions=3072))

#: Where the released revisions are pinned: ``NNNN <SHA-256 of its rendering>`` a line, oldest first.
RELEASED_FILE = "released.txt"
_RELEASED_HEADER = (
    "# The released schema revisions: each one's rendering digest (prism_memory.revision.rendering_digest).\n"
    "# A released revision never changes; `python -m prism_memory.revision --release` pins the newest ones.\n"
)


def released() -> dict[str, str]:
    """The pinned revisions, oldest first: ``{"0001": "<sha256 hex>", ...}`` (``sql/migrations/released.txt``)."""
    path = sql_source.MIGRATIONS_SQL_DIR / RELEASED_FILE
    lines = sql_source.read(path).splitlines() if path.is_file() else []
    return dict(line.split() for line in lines if line.strip() and not line.startswith("#"))


def release() -> list[str]:
    """Pin every revision not pinned yet (the newest ones) in ``sql/migrations/released.txt``; returns them."""
    pinned = released()
    new = [revision for revision in sql_source.revisions() if revision not in pinned]
    pinned.update((revision, rendering_digest(revision)) for revision in new)
    text = _RELEASED_HEADER + "".join(f"{revision} {digest}\n" for revision, digest in pinned.items())
    (sql_source.MIGRATIONS_SQL_DIR / RELEASED_FILE).write_bytes(text.encode("utf-8"))
    return new


def rendering_digest(revision: str) -> str:
    """SHA-256 (hex) of ``revision``'s rendered SQL: upgrade, vector search and downgrade, for every config of
    :data:`RENDERED_CONFIGS`, lines starting with ``--`` left out (comments outside bodies may be reworded)."""
    text = "".join(render_revision(revision, config, part) for config in RENDERED_CONFIGS
                   for part in ("upgrade", "vector_search", "vector_search_down", "downgrade"))
    uncommented = "\n".join(line for line in text.split("\n") if not line.startswith("--"))
    return hashlib.sha256(uncommented.encode()).hexdigest()


_DROP = r"^drop function (?:if exists )?\{\{schema\}\}\.(\w+)\("
#: In a revision file: a function file written out (groups 1, 2), or a whole ``drop function`` line (group 3:
#: the function dropped).
_EVENTS = re.compile(f"{sql_source.FILE_BLOCK.pattern}|{_DROP}.*\n", re.M)
#: The lines the cutter writes itself, besides function files and drops (an amended cut writes them anew).
_GENERATED = re.compile(r"^(?:\{\{pin_search_path\}\}|reset search_path;|revoke execute on all functions in schema "
                        r"\{\{schema\}\} from public;|grant execute on function \{\{schema\}\}\.install_info_v1\(\) "
                        r"to public;)\n", re.M)


def _function_name(relative: str) -> str | None:
    """``recall_v3`` for ``functions/recall_v3.sql``; ``None`` for a head file that is not a function's."""
    match = re.fullmatch(r"functions/(\w+)\.sql", relative)
    return match.group(1) if match else None


def chain_functions(through: str | None = None) -> tuple[dict[str, str], set[str]]:
    """What the upgrades install through revision ``through`` (``None``: the newest).

    Returns ``({function name: its file's text}, every function name ever
    installed)``: a revision's function files replace earlier ones, and its
    ``drop function`` lines remove them.
    """
    live: dict[str, str] = {}
    ever: set[str] = set()
    for revision in sql_source.revisions():
        if through is not None and revision > through:
            break
        for match in _EVENTS.finditer(sql_source.revision_file(revision, "upgrade") or ""):
            name = _function_name(match.group(1)) if match.group(1) else None
            if name:
                live[name] = match.group(2)
                ever.add(name)
            elif match.group(3):
                live.pop(match.group(3), None)
    return live, ever


def install_order() -> list[str]:
    """The functions in the order ``install.sql`` creates them (a function before those whose SQL bodies call it)."""
    names = []

    def walk(path: Path) -> None:
        for match in sql_source.INCLUDE.finditer(sql_source.read(path)):
            target = (path.parent / match.group(1)).resolve()
            function = _function_name(target.relative_to(sql_source.SCHEMA_DIR.resolve()).as_posix())
            if function:
                names.append(function)
            else:
                walk(target)

    walk(sql_source.SCHEMA_DIR / "install.sql")
    return names


def _block(name: str, text: str) -> str:
    """A function file written out in a revision (``text`` ends with a newline)."""
    relative = f"functions/{name}.sql"
    return f"-- file {relative}\n{text}-- end of {relative}\n\n"


class _HandWritten:
    """What an author wrote into a revision file the cutter made: its header, its statements before the
    functions (table changes) and after them and the drops (what needs the functions, such as grants on the
    ones a downgrade restores), and its ``drop`` lines."""

    def __init__(self, text: str = "") -> None:
        lines = text.splitlines(keepends=True)
        count = next((index for index, line in enumerate(lines) if not line.startswith("--")), len(lines))
        self.header = "".join(lines[:count])
        rest = "".join(lines[count:])
        cut = max((match.end() for match in _EVENTS.finditer(rest)), default=len(rest))
        rest, after = rest[:cut], rest[cut:]
        self.drops = {match.group(1): match.group(0) for match in re.finditer(_DROP + r".*\n", rest, re.M)}
        self.statements, self.after = (
            re.sub(_DROP + r".*\n", "", _GENERATED.sub("", sql_source.FILE_BLOCK.sub("", part)), flags=re.M).strip("\n")
            for part in (rest, after))

    def drop(self, name: str) -> str:
        """The ``drop function`` line for ``name``: as the author completed it, else one to complete."""
        return self.drops.get(name, f"drop function {{{{schema}}}}.{name}(/* its argument types */);\n")

    def file(self, header: str, functions: list[str], drops: list[str], revoke: bool) -> str:
        """A revision file: the header (the author's, else ``header``), statements, functions, drops,
        the statements after them."""
        parts = [self.header or header, "\n{{pin_search_path}}\n\n"]
        parts += [self.statements + "\n\n"] if self.statements else []
        parts += functions + [self.drop(name) for name in drops]
        parts += ["\n" + self.after + "\n"] if self.after else []
        parts += ["\nreset search_path;\n"]
        parts += ["revoke execute on all functions in schema {{schema}} from public;\n"
                  "grant execute on function {{schema}}.install_info_v1() to public;\n"] if revoke else []
        return "".join(parts)


def new_revision(name: str, amend: bool = False) -> list[Path]:
    """Cut schema revision N+1 from the head function files that differ from what revision N installs.

    Writes ``sql/migrations/NNNN_<name>.sql``: the full text of each added or
    changed function (``install_info_v1`` always, as it reports the revision),
    in install order, then a ``drop function`` line for each removed one, with
    EXECUTE revoked from PUBLIC again when a function is added (PostgreSQL grants
    it to every new function); ``NNNN_<name>.down.sql``: the text each changed or
    removed function had before (from the newest earlier revision that installed
    it), then a ``drop`` line for each added one; and the Alembic module. The
    header comment says :data:`PLACEHOLDER` until the author writes what the
    revision changes; hand-written statements (table changes) go between the
    header and the functions.

    ``amend=True`` re-cuts the newest revision, which must not be released: its
    files are deleted and it is cut again (under ``name``, the same number) from
    the revision before, keeping the hand-written header and statements of each
    file and the argument types written into its ``drop`` lines.

    Returns the files written. Raises ``ValueError`` for a bad name, an amend of
    a released revision, when nothing changed, when a head file does not end
    with a newline, or when a function is added under a name an earlier revision
    removed (a new function takes the next ``_vN``).
    """
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or name == "vector_search":
        raise ValueError(f"revision name {name!r}: use lower-case letters, digits and '_'")
    chain = list(sql_source.revisions().items())
    if amend:
        (previous, _), (revision, amended) = chain[-2:]
        if revision in released():
            raise ValueError(f"revision {revision} is released (pinned in sql/migrations/{RELEASED_FILE}): "
                             "it never changes; cut a new revision instead")
    else:
        (previous, _), amended = chain[-1], None
        revision = f"{int(previous) + 1:04d}"
    before, ever = chain_functions(previous)
    head = sql_source.head_functions()
    for function, text in head.items():
        if not text.endswith("\n"):
            raise ValueError(f"sql/schema/functions/{function}.sql must end with a newline")
    order = {function: index for index, function in enumerate(install_order())}
    added = sorted((function for function in head if function not in before), key=order.get)
    changed = sorted((function for function in head if function in before and head[function] != before[function]),
                     key=order.get)
    removed = sorted(function for function in before if function not in head)
    if not (added or changed or removed):
        raise ValueError(f"no head function changed since revision {previous}: there is nothing to cut")
    reused = sorted(set(added) & ever)
    if reused:
        raise ValueError(f"{', '.join(reused)}: removed by an earlier revision, and a name is never used again "
                         "(give a new function the next _vN)")
    return _write(revision, previous, name, amended, head, before, added, changed, removed, order)


def _write(revision: str, previous: str, name: str, amended: str | None, head: dict[str, str], before: dict[str, str],
           added: list[str], changed: list[str], removed: list[str], order: dict[str, int]) -> list[Path]:
    """Write the revision's files (deleting the amended revision's first); returns the paths written."""
    from mako.template import Template

    migrations, versions = sql_source.MIGRATIONS_SQL_DIR, sql_source.ALEMBIC_DIR / "versions"
    old_files = [migrations / f"{amended}.sql", migrations / f"{amended}.down.sql", versions / f"{amended}.py"]
    old_up, old_down = (_HandWritten(sql_source.read(path) if amended else "") for path in old_files[:2])
    if amended:
        old_up.header = old_up.header.replace(f"revision {revision}: {amended[5:]}.", f"revision {revision}: {name}.")
    upgrade_functions = ["install_info_v1"] + sorted(set(added + changed) - {"install_info_v1"}, key=order.__getitem__)
    upgrade = old_up.file(f"-- prism-memory schema revision {revision}: {name}. {PLACEHOLDER}\n",
                          [_block(function, head[function]) for function in upgrade_functions], removed, bool(added))
    restored = removed + [function for function in changed if function != "install_info_v1"]
    downgrade = old_down.file(f"-- Reverts revision {revision}.\n",
                              [_block(function, before[function]) for function in ["install_info_v1"] + restored],
                              added[::-1], bool(removed))
    summary = _docstring_summary(amended, name)
    stem = f"{revision}_{name}"
    written = {
        migrations / f"{stem}.sql": upgrade,
        migrations / f"{stem}.down.sql": downgrade,
        versions / f"{stem}.py": Template(filename=str(sql_source.ALEMBIC_DIR / "script.py.mako")).render(
            message=summary, up_revision=revision, down_revision=previous),
    }
    for path in old_files if amended else []:
        path.unlink(missing_ok=True)
    for path, text in written.items():
        path.write_bytes(text.encode("utf-8"))
    return list(written)


def _docstring_summary(amended: str | None, name: str) -> str:
    """The Alembic module's docstring summary: the amended revision's (renamed), else the placeholder."""
    source = sql_source.read(sql_source.ALEMBIC_DIR / "versions" / f"{amended}.py") if amended else ""
    match = re.search(r'\A"""(\w+): (.*?)\n', source)
    return f"{name}: {match.group(2)}" if match else f"{name}: {PLACEHOLDER}"


def show(revision: str, config: SchemaConfig, down: bool = False) -> str:
    """What ``revision`` runs for ``config``, rendered: its upgrade and vector-search part, or (``down``) the reverse.

    Raises ``KeyError`` for an unknown revision.
    """
    parts = ("vector_search_down", "downgrade") if down else ("upgrade", "vector_search")
    return "".join(render_revision(revision, config, part) for part in parts)


def main(argv: list[str] | None = None) -> int:
    """Cut a revision (``NAME``), re-cut the newest (``--amend [NAME]``), print one (``--show NNNN [--down]``) or pin
    the unreleased ones (``--release``); returns 0, or 2 with a one-line error when the cutter refuses."""
    parser = argparse.ArgumentParser(prog="python -m prism_memory.revision",
                                     description="Cut the next schema revision from the edited head files in sql/schema, "
                                                 "print what a revision runs, or pin the unreleased revisions.")
    parser.add_argument("name", nargs="?", help="the revision's name: lower-case letters, digits and '_', e.g. citus_safe")
    parser.add_argument("--amend", action="store_true",
                        help="re-cut the newest revision (not yet released) from the head, under its name unless NAME "
                             "gives another")
    parser.add_argument("--show", metavar="NNNN", help="print the SQL revision NNNN runs, rendered, and cut nothing")
    parser.add_argument("--down", action="store_true", help="with --show: the downgrade")
    parser.add_argument("--schema", default=DEFAULT_SCHEMA, help="with --show: the schema name")
    parser.add_argument("--table", default=DEFAULT_TABLE, help="with --show: the entries table's name")
    parser.add_argument("--dimensions", type=int, help="with --show: the pinned embedding width")
    parser.add_argument("--release", action="store_true",
                        help=f"pin every revision not pinned yet in sql/migrations/{RELEASED_FILE}: they never change again")
    arguments = parser.parse_args(argv)
    if arguments.show:
        if arguments.show not in sql_source.revisions():
            parser.error(f"no revision {arguments.show}")
        print(show(arguments.show, SchemaConfig(arguments.schema, arguments.table, arguments.dimensions), arguments.down),
              end="")
        return 0
    if arguments.release:
        pinned = release()
        print(f"pinned {', '.join(pinned)}" if pinned else "every revision was pinned already")
        return 0
    newest = list(sql_source.revisions().values())[-1]
    name = arguments.name or (newest[5:] if arguments.amend else None)
    if not name:
        parser.error("name the revision to cut (or --amend, --show NNNN, --release)")
    try:
        written = new_revision(name, amend=arguments.amend)
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: {error}\n")
    if arguments.amend and name != newest[5:]:
        print(f"renamed {newest} to {newest[:5]}{name}")
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
