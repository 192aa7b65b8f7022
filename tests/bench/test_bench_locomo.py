"""bench/locomo.py on a one-conversation slice with the hash embedder: its JSON, its baselines, and the tie check
that decides whether the backends' rankings differ for real. No figure is asserted: they are the benchmark's
to print (docs/benchmarks.md); the model lane of .ci/run runs the same slice with MiniLM."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # after site-packages: bench/mcp.py must not shadow the SDK's mcp package

from locomo import is_tie  # noqa: E402


def test_a_swap_is_a_tie_only_within_1e6():
    assert is_tie([("a", 0.5), ("b", 0.5 - 1e-7)], [("b", 0.5), ("a", 0.5 - 1e-8)])
    assert not is_tie([("a", 0.5), ("b", 0.4)], [("b", 0.5), ("a", 0.4)])
    assert is_tie([("a", 0.5), ("b", 0.3)], [("a", 0.5), ("c", 0.3 + 1e-7)])  # the last place, tied
    assert not is_tie([("a", 0.5), ("b", 0.3)], [("a", 0.5), ("c", 0.2)])


def test_the_slice_reports_every_retriever_on_both_backends(locomo_path, server_dsn):
    run = subprocess.run(
        [sys.executable, str(BENCH / "locomo.py"), "--input", str(locomo_path), "--limit", "1", "--dimensions", "64",
         "--dsn", server_dsn("bench_locomo")],
        capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["embedder"] == "hash" and result["conversations"] == 1 and result["model_id"] == "prism-memory/hash-v1-d64"
    for name in ("postgres", "memory", "bm25", "dense", "rrf"):
        values = [result[f"recall_at_{k}_{name}"] for k in (1, 5, 10, 25)]
        assert values == sorted(values) and 0 < values[-1] <= 1, name
    assert result["recall_at_10_postgres"] == result["recall_at_10_memory"]
    assert result["rankings_differing_beyond_ties"] == 0 and result["identical_rankings"]  # the hash embedder is exact
    assert sorted(result["per_category"]) == ["1", "2", "3", "4"]
    assert "bm25" in run.stderr and "rrf" in run.stderr
