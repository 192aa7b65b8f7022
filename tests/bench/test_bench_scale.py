"""The scale benchmark's corpus and a CI-sized run of bench/scale.py. No timing is asserted here:
the figures are the benchmark's to print (docs/performance.md)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))  # after site-packages: bench/mcp.py must not shadow the SDK's mcp package

from corpus import CorpusSpec, tenant_batches, thread_entries, thread_sizes, threads  # noqa: E402

SMOKE = CorpusSpec(entries=20_000, tenants=200)


def test_corpus_has_the_promised_shape_and_is_deterministic():
    sizes = thread_sizes(SMOKE)
    assert sum(sizes) == SMOKE.entries
    assert sizes[0] == SMOKE.max_thread and max(sizes) == SMOKE.max_thread
    assert min(sizes) >= SMOKE.min_thread
    assert thread_sizes(SMOKE) == sizes
    assert thread_sizes(CorpusSpec(entries=20_000, tenants=200, seed=8)) != sizes
    all_threads = threads(SMOKE)
    assert {thread.scope.tenant_id for thread in all_threads} == {f"tenant-{n:05d}" for n in range(SMOKE.tenants)}
    entries = [thread_entries(SMOKE, thread) for thread in all_threads]
    invalid = sum(len(e.revoked) + len(e.tombstoned) for e in entries)
    assert 0.08 < invalid / SMOKE.entries < 0.12
    again = thread_entries(SMOKE, all_threads[3])
    assert [r.text for r in again.records] == [r.text for r in entries[3].records]
    assert np.array_equal(again.embeddings, entries[3].embeddings)
    assert np.allclose(np.linalg.norm(entries[3].embeddings, axis=1), 1.0, atol=1e-5)


def test_corpus_batches_hold_one_tenant_each_and_cover_every_entry():
    seen = 0
    for writes in tenant_batches(SMOKE, 1000):
        assert len({thread.scope.tenant_id for thread, _ in writes}) == 1
        assert sum(len(rows.records) for _, rows in writes) <= 1000
        seen += sum(len(rows.records) for _, rows in writes)
    assert seen == SMOKE.entries


@pytest.mark.slow
def test_scale_benchmark_runs_on_20000_entries_and_answers_exactly(pg_dsn):
    completed = subprocess.run(
        [sys.executable, str(BENCH / "scale.py"), "--dsn", pg_dsn, "--entries", "20000",
         "--queries", "200", "--warmup", "20", "--scope-sizes", "1000,12000", "--scope-queries", "5",
         "--resource-queries", "20"],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    tombstoned = sum(len(thread_entries(SMOKE, thread).tombstoned) for thread in threads(SMOKE))
    assert result["exact"] is True
    assert (result["entries"], result["tenants"], result["tombstoned"]) == (20_000, 200, tombstoned)
    assert result["queries"] == 200 and result["largest_thread_entries"] == 5000
    for key in ("ingest_entries_per_s", "scoped_recall_p50_ms", "scoped_recall_p99_ms", "per_row_us",
                "rss_mb_peak", "membw_floor_us_per_row", "resource_recall_p50_ms", "resource_ingest_entries_per_s"):
        assert result[key] > 0, key
    # Threads are ranked exactly; the 12,000-entry resource (6,000 travellers) goes through HNSW.
    table = {(row["scope"], row["entries"]): row for row in result["scope_table"]}
    assert table["thread", 1000]["exact"] and table["thread", 12000]["exact"]
    assert table["resource", 1000]["recall_at_10"] == 1.0
    assert result["resource_recall_at_10"] >= 0.9 and result["resource_entries"] == 12000
    assert "Bitmap Index Scan on semantic_memory_scope_idx" in completed.stderr
