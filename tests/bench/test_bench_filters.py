"""A CI-sized run of bench/filters.py: filtered and windowed recall answer exactly (the plain ranking
restricted to the selection), the filtered recall reads its thread through the scope index, and the JSON line
holds every key docs/benchmarks.md names. No timing is asserted: the bounds are the benchmark's to print."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
KEYS = ("plain_recall_p50_ms", "filtered_1pct_recall_p50_ms", "filtered_50pct_recall_p50_ms", "window_recall_p50_ms",
        "filtered_vs_plain_1pct", "filtered_vs_plain_50pct", "window_vs_plain")


@pytest.mark.slow
def test_the_filter_benchmark_answers_exactly_through_the_scope_index(pg_dsn):
    completed = subprocess.run(
        [sys.executable, str(BENCH / "filters.py"), "--dsn", pg_dsn, "--entries", "1000", "--rounds", "20"],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result["exact"] is True and result["plan_uses_scope_index"] is True, completed.stderr[-3000:]
    assert result["entries"] == 1000 and result["rounds"] == 20
    assert all(result[key] > 0 for key in KEYS)
