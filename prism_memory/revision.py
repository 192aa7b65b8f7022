"""``python -m prism_memory.revision NAME``: cut the next schema revision (a maintainer's command).

See :func:`prism_memory.sql_source.new_revision` and docs/architecture.md,
"How to change a SQL function".
"""

from __future__ import annotations

import argparse

from .sql_source import new_revision


def main(argv: list[str] | None = None) -> int:
    """Parse ``NAME`` and print each file :func:`~prism_memory.sql_source.new_revision` writes; returns 0."""
    parser = argparse.ArgumentParser(prog="python -m prism_memory.revision",
                                     description="Cut the next schema revision from the edited head files in sql/schema.")
    parser.add_argument("name", help="the revision's name: lower-case letters, digits and '_', e.g. citus_safe")
    for path in new_revision(parser.parse_args(argv).name):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
