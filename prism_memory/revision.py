"""``python -m prism_memory.revision [--amend] NAME``: cut the next schema revision (a maintainer's command).

The head (``sql/schema``) is edited; a revision is cut from it. A revision's
upgrade file writes out in full every function file that changed, was added,
or was removed since the revision before (``-- file functions/<name>.sql`` ...
``-- end of ...``), and its downgrade file the texts those replaced, taken from
the newest earlier revision that installed them. Nothing but the files
themselves is read: no history, no diffs.

A revision is *released* when its rendering is pinned in :data:`RELEASED`;
nothing else is. A released revision never changes: the tests check each
pinned digest, and the cutter refuses to amend one. Pin a revision when it
lands on ``main`` (docs/architecture.md, "How to change a SQL function").
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

#: SHA-256 of each released revision's rendering (:func:`rendering_digest`). What a released revision
#: installs never changes, whatever happens to the head files or to the Python constants its rendering
#: reads (widths, stopwords). Add the newest revision here when it lands on main.
RELEASED = {
    "0001": "c0a3be51c326d31af16da911e41254f2213908f8feb072b101c3c05c02ed6462",
    "0002": "0ea33eeb6f9814083a8fc42882e4b504a120a582f18f464bbf19b5dbdb9f321f",
    "0003": "c3d1b852de9ddc8eaf3068a05cdf8c242c201f6aed6d5cd4e1513960afa5d7e2",
    "0004": "5c551f0c074a08468423394e76a8afbba05254fbe683b4857d596b64138de8d6",
    "0005": "fa21dffd1641d9279f118523ec052c2ac88e37966508faa1732554912a6790cb",
    "0006": "94832fac0e4e8abed400466fe53c371b8dcc82c8ef3f4ab047825a3016eb8592",
    "0007": "43269509fda588c5b7e342dbbdb86fb81c07afd2c87c5c0d73dea123ae3dd289",
    "0008": "d6d3bd7776d78c8ee20962987002d95a621d66e4e61eda146d9f97dbcf311e2b",
    "0009": "bd0cbcbde2635b7daa8ac234a07aea98168cc5f9936cc741786755d5c8973901",
    "0010": "14db57df69ad7af5f2efadb962af4c1fa3f0e80285bd489fe75c2da0d521fab1",
    "0011": "0cb3a7d50e4b327b830723f7b1bb5a83df0970e7fa243d1ed75fc8a99fa6623e",
    "0012": "ac755ec2fd99c7d5ba89826850d301444b96c8ff80e67049479d2fe866319a51",
    "0013": "7d0e2c0cb652a7e115df90ce2265323650ce73b27c2d33934eb35b29c5227fcc",
    "0014": "8aa7bf11a00afe9b0dec67eab834a76c926a8a5c050bc14f26b41739d5859ef7",
    "0015": "b8825bcd32442bda969fe72f11343f643d7dbee5bd6a6148b0d00615b10d78c4",
}


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
        for match in re.finditer(r"^\\ir (\S+)[ \t]*$", sql_source.read(path), re.M):
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
        if revision in RELEASED:
            raise ValueError(f"revision {revision} is released (pinned in prism_memory.revision.RELEASED): "
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
    """Cut a revision (``[--amend] NAME``) or print one (``--show NNNN [--down]``); returns 0.

    Errors of :func:`new_revision` (``ValueError``) propagate; an unknown
    revision or a missing name exits with argparse's usage error.
    """
    parser = argparse.ArgumentParser(prog="python -m prism_memory.revision",
                                     description="Cut the next schema revision from the edited head files in sql/schema, "
                                                 "or print what a revision runs.")
    parser.add_argument("name", nargs="?", help="the revision's name: lower-case letters, digits and '_', e.g. citus_safe")
    parser.add_argument("--amend", action="store_true",
                        help="re-cut the newest revision (not yet released) from the head instead of cutting a new one")
    parser.add_argument("--show", metavar="NNNN", help="print the SQL revision NNNN runs, rendered, and cut nothing")
    parser.add_argument("--down", action="store_true", help="with --show: the downgrade")
    parser.add_argument("--schema", default=DEFAULT_SCHEMA, help="with --show: the schema name")
    parser.add_argument("--table", default=DEFAULT_TABLE, help="with --show: the entries table's name")
    parser.add_argument("--dimensions", type=int, help="with --show: the pinned embedding width")
    arguments = parser.parse_args(argv)
    if arguments.show:
        if arguments.show not in sql_source.revisions():
            parser.error(f"no revision {arguments.show}")
        print(show(arguments.show, SchemaConfig(arguments.schema, arguments.table, arguments.dimensions), arguments.down),
              end="")
        return 0
    if not arguments.name:
        parser.error("name the revision to cut (or --show NNNN)")
    for path in new_revision(arguments.name, amend=arguments.amend):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
