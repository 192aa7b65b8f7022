"""Chaos benchmark: 16 clients over the public API while the embedded server restarts and every backend is killed.

Runs the engine of tests/chaos.py (see its docstring) on a throw-away embedded
PostgreSQL: by default 60 s, 3 restarts and 2 terminations of every backend.
Then measures the worst allowed query against a typical one
(``worst_query_cost_ratio``, goal at most 5). The last stdout line is one JSON
object: ``ops``, ``failed_after_recovery`` (goal 0), ``lost_writes`` (goal 0),
``cross_scope_hits`` (goal 0), ``untyped_errors`` (goal 0), ``recovery_p99_ms``,
``worst_query_cost_ratio``, and the details behind them.

``--outage-s S``: instead of the restarts and terminations, the server is
stopped once, 5 s in, for S seconds, while each client calls once a second;
the run lasts 5 + S + 15 s (or ``--seconds``) and adds ``recovery_after_long_outage_ms`` (the
worst client's first success after the server accepts connections again, goal
at most 2,000).

``--failover``: the engine of tests/failover.py instead: a primary and a
streaming standby on 127.0.0.1 (synchronous unless ``--async``), the standby
promoted under load and the old primary stopped, the store on a multi-host
DSN. Prints ``failover_failed_after_recovery`` (goal 0),
``failover_lost_acknowledged_writes`` (goal 0 when synchronous),
``failover_recovery_ms`` and the details.

    .venv/bin/python bench/chaos.py [--seconds 60] [--clients 16] [--restarts 3] [--terminations 2]
    .venv/bin/python bench/chaos.py --outage-s 60
    .venv/bin/python bench/chaos.py --failover [--seconds 20] [--async] [--gap-s 1]
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
    parser.add_argument("--seconds", type=float, help="the run's length (default 60; --outage-s S: 5 + S + 15; --failover: 20)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--terminations", type=int, default=2)
    parser.add_argument("--outage-s", type=float, default=0.0, help="one stop of this many seconds instead")
    parser.add_argument("--failover", action="store_true", help="promote a streaming standby under load instead")
    parser.add_argument("--async", dest="synchronous", action="store_false", help="failover: asynchronous replication")
    parser.add_argument("--gap-s", type=float, default=1.0, help="failover: from the promotion to the old primary's stop")
    parser.add_argument("--entries", type=int, default=2000, help="thread size for the query-cost figure")
    parser.add_argument("--chunks", type=int, default=5000, help="RAG scope size for the query-cost figure")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.failover:
        failover(args)
        return
    if args.outage_s:
        args.seconds, args.restarts, args.terminations = args.seconds or 5 + args.outage_s + 15, 0, 0
        log(f"{args.clients} clients for {args.seconds:.0f} s, calling once a second; the server stopped for {args.outage_s:.0f} s")
    else:
        args.seconds = args.seconds or 60.0
        log(f"{args.clients} clients for {args.seconds:.0f} s, {args.restarts} restarts, {args.terminations} terminations")
    result = asyncio.run(run_chaos(clients=args.clients, seconds=args.seconds, restarts=args.restarts,
                                   terminations=args.terminations, seed=args.seed, outage_s=args.outage_s,
                                   pace_s=1.0 if args.outage_s else 0.0))
    for line in (result.lost_writes + result.cross_scope_hits + result.untyped_errors + result.failed_after_recovery)[:20]:
        log(line)
    log("measuring the worst allowed query against a typical one")
    cost = asyncio.run(query_cost(args.entries, args.chunks))
    outage = {"recovery_after_long_outage_ms": result.recovery_max_ms, "outage_s": args.outage_s} if args.outage_s else {}
    emit({"ops": result.ops, "failed_after_recovery": len(result.failed_after_recovery),
          "lost_writes": len(result.lost_writes), "cross_scope_hits": len(result.cross_scope_hits),
          "untyped_errors": len(result.untyped_errors), "recovery_p99_ms": result.recovery_p99_ms, **outage,
          "worst_query_cost_ratio": cost["worst_query_cost_ratio"], "typed_failures_during_outages": result.typed_failures,
          "unacknowledged_commits": result.unacknowledged_commits, "outages": len(result.outages),
          **{key: value for key, value in cost.items() if key != "worst_query_cost_ratio"},
          "clients": args.clients, "seconds": args.seconds})


def failover(args: argparse.Namespace) -> None:
    from failover import run_failover

    seconds = args.seconds or 20.0
    mode = "synchronous" if args.synchronous else "asynchronous"
    log(f"{args.clients} clients for {seconds:.0f} s; {mode} standby promoted at 6 s, old primary stopped {args.gap_s} s later")
    result = asyncio.run(run_failover(clients=args.clients, seconds=seconds, synchronous=args.synchronous,
                                      gap_s=args.gap_s, seed=args.seed))
    for line in (result.lost_acknowledged_writes + result.untyped_errors + result.failed_after_recovery)[:20]:
        log(line)
    emit({"failover_failed_after_recovery": len(result.failed_after_recovery),
          "failover_lost_acknowledged_writes": len(result.lost_acknowledged_writes),
          "failover_recovery_ms": result.recovery_ms, "replication": mode,
          "acknowledged_during_switch": result.acknowledged_during_switch, "ops": result.ops,
          "untyped_errors": len(result.untyped_errors), "typed_failures_during_switch": result.typed_failures,
          "clients": args.clients, "seconds": seconds, "gap_s": args.gap_s})


if __name__ == "__main__":
    main()
