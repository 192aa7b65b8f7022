"""The ``prism-memory`` command line: migrate, import, recall, working memory, demo, the MCP server.

Every command talks to PostgreSQL (``--dsn``; by default the embedded server
kept under the user data dir) or, with ``--backend memory``, to the in-process
emulator (data is lost at exit). ``--embedder`` picks the model that embeds
entries and queries: the hash embedder (the default: no model, no download),
a local sentence-transformers model (``minilm``, ``local``; the ``local``
extra) or an OpenAI-compatible endpoint (``openai``; the ``openai`` extra).
Exit codes: 0 OK, 2 for usage and validation errors (the typed message, no
traceback), 1 otherwise.

The commands come in groups, one module each, and each group adds its own subcommands to the parser:
:mod:`~prism_memory.cli.admin` (migrate, role, distribute, server), :mod:`~prism_memory.cli.data` (import,
recall, working, demo) and :mod:`~prism_memory.cli.mcp` (mcp, mcp-token); :mod:`~prism_memory.cli.options`
holds what they share.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from collections.abc import Sequence
from importlib.metadata import version

from rich.console import Console

from ..errors import ConfigurationError, EmbeddingModelMismatchError, ValidationError
from . import admin, data, mcp
from .options import DEFAULT_RESOURCE, DEFAULT_TENANT, Commands, UsageError, add_common_options


def build_parser() -> argparse.ArgumentParser:
    """The ``prism-memory`` argument parser; each command sets ``handler``."""
    parser = argparse.ArgumentParser(prog="prism-memory", description="Agent memory in PostgreSQL + pgvector.")
    parser.add_argument("--version", action="version", version=f"prism-memory {version('prism-memory')}")
    add_common_options(parser, suppress=False)
    commands = Commands(parser, "command", "COMMAND")
    for group in (admin, data, mcp):
        group.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the exit code (0 OK, 2 usage/validation, 1 other)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2
    if not getattr(args, "explicit_scope", False):
        args.tenant = DEFAULT_TENANT if args.tenant is None else args.tenant
        args.resource = DEFAULT_RESOURCE if args.resource is None else args.resource
    out = Console(highlight=False, soft_wrap=True)
    status = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        asyncio.run(args.handler(args, out, status))
    except (UsageError, ValidationError, ConfigurationError, EmbeddingModelMismatchError) as exc:  # a wrong --embedder too
        status.print(f"prism-memory: error: {type(exc).__name__}: {exc}", markup=False)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("PRISM_MEMORY_DEBUG"):
            raise
        status.print(f"prism-memory: error: {type(exc).__name__}: {exc}", markup=False)
        return 1
    return 0
