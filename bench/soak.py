"""Soak benchmark: 16 concurrent clients mixing every operation over random scopes, for longer than CI.

Runs the engine of tests/soak.py (see its docstring) against a throw-away embedded
Postgres (or ``--dsn``, local only), then prints one JSON line: ``ops``, ``errors``
(unexpected ones), ``cross_scope`` (hits from another scope), ``leaks`` (pool
connections not returned), ``mismatches`` (scopes whose final state differs from the
emulator replaying the same operations), ``p99_ms`` and ``ops_per_s``.

    .venv/bin/python bench/soak.py [--seconds 120] [--clients 16] [--dsn URL]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

from prism_memory.schema import SchemaConfig, migrate

from _common import emit, local_postgres, log

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from soak import run_soak  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="a local Postgres URL (default: a throw-away embedded server)")
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with local_postgres(args.dsn) as dsn:
        migrate(dsn, SchemaConfig(dimensions=64))  # the default schema: give --dsn a scratch database
        log(f"soaking {args.clients} clients for {args.seconds:.0f} s")
        started = time.perf_counter()
        result = asyncio.run(run_soak(dsn, clients=args.clients, seconds=args.seconds, seed=args.seed))
        elapsed = time.perf_counter() - started
    for line in (result.errors + result.cross_scope + result.mismatches)[:20]:
        log(line)
    emit({"ops": result.ops, "errors": len(result.errors), "cross_scope": len(result.cross_scope), "leaks": result.leaks,
          "mismatches": len(result.mismatches), "p99_ms": result.p99_ms, "ops_per_s": round(result.ops / elapsed, 1),
          "clients": args.clients, "seconds": args.seconds})


if __name__ == "__main__":
    main()
