"""``python -m prism_memory.revision [--amend] NAME``: cut the next schema revision (a maintainer's command).

See :func:`prism_memory.sql_source.new_revision` and docs/architecture.md,
"How to change a SQL function".
"""

from __future__ import annotations

import argparse

from .sql_source import new_revision


def main(argv: list[str] | None = None) -> int:
    """Parse ``[--amend] NAME`` and print each file :func:`~prism_memory.sql_source.new_revision` writes; returns 0.

    Errors of ``new_revision`` (``ValueError``, ``LookupError``, ``DeltaError``) propagate.
    """
    parser = argparse.ArgumentParser(prog="python -m prism_memory.revision",
                                     description="Cut the next schema revision from the edited head files in sql/schema.")
    parser.add_argument("name", help="the revision's name: lower-case letters, digits and '_', e.g. citus_safe")
    parser.add_argument("--amend", action="store_true",
                        help="re-cut the newest revision (not yet released) from the head instead of cutting a new one")
    arguments = parser.parse_args(argv)
    for path in new_revision(arguments.name, amend=arguments.amend):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
