"""The chaos scenario, short (bench/chaos.py runs it for 60 s): a real restart of an embedded server and a
termination of every backend while clients call the public API. No timing is asserted here."""

from chaos import query_cost, run_chaos


async def test_a_restart_and_killed_backends_lose_nothing_and_leak_nothing():
    result = await run_chaos(clients=6, seconds=4.0, restarts=1, terminations=1)
    assert len(result.outages) == 2 and result.ops > 50
    assert result.untyped_errors == []
    assert result.lost_writes == []
    assert result.cross_scope_hits == []
    assert result.failed_after_recovery == []
    assert len(result.recoveries_ms) > 0


async def test_the_query_cost_figures_are_measured():
    figures = await query_cost(entries=200, chunks=300, repeats=3)
    assert set(figures) == {"recall_typical_ms", "recall_worst_ms", "lexical_typical_ms", "lexical_worst_ms",
                            "worst_query_cost_ratio"}
    assert all(value > 0 for value in figures.values())
