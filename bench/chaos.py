"""Chaos benchmark: 16 clients over the public API while the embedded server restarts and every backend is killed.

Runs the engine of tests/chaos.py (see its docstring) on a throw-away embedded
PostgreSQL: by default 60 s, 3 restarts and 2 terminations of every backend.
Then measures the worst allowed query against a typical one
(``worst_query_cost_ratio``, goal at most 5). The last stdout line is one JSON
object: ``ops``, ``failed_after_recovery`` (goal 0), ``lost_writes`` (goal 0),
``cross_scope_hits`` (goal 0), ``untyped_errors`` (goal 0), ``recovery_p99_ms``,
``worst_query_cost_ratio``, and the details behind them.

    .venv/bin/python bench/chaos.py [--seconds 60] [--clients 16] [--restarts 3] [--terminations 2]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from _common import emit, log

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from chaos import query_cost, run_chaos  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--terminations", type=int, default=2)
    parser.add_argument("--entries", type=int, default=2000, help="thread size for the query-cost figure")
    parser.add_argument("--chunks", type=int, default=5000, help="RAG scope size for the query-cost figure")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    log(f"{args.clients} clients for {args.seconds:.0f} s, {args.restarts} restarts, {args.terminations} terminations")
    result = asyncio.run(run_chaos(clients=args.clients, seconds=args.seconds, restarts=args.restarts,
                                   terminations=args.terminations, seed=args.seed))
    for line in (result.lost_writes + result.cross_scope_hits + result.untyped_errors + result.failed_after_recovery)[:20]:
        log(line)
    log("measuring the worst allowed query against a typical one")
    cost = asyncio.run(query_cost(args.entries, args.chunks))
    emit({"ops": result.ops, "failed_after_recovery": len(result.failed_after_recovery),
          "lost_writes": len(result.lost_writes), "cross_scope_hits": len(result.cross_scope_hits),
          "untyped_errors": len(result.untyped_errors), "recovery_p99_ms": result.recovery_p99_ms,
          "worst_query_cost_ratio": cost["worst_query_cost_ratio"], "typed_failures_during_outages": result.typed_failures,
          "unacknowledged_commits": result.unacknowledged_commits, "outages": len(result.outages),
          **{key: value for key, value in cost.items() if key != "worst_query_cost_ratio"},
          "clients": args.clients, "seconds": args.seconds})


if __name__ == "__main__":
    main()
