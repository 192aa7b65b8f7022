"""A short soak (about 20 s): 16 concurrent clients, random operations and scopes, one pool."""

import pytest

from soak import run_soak


@pytest.mark.slow
async def test_sixteen_clients_mixing_every_operation(pg_dsn):
    result = await run_soak(pg_dsn, clients=16, seconds=20)
    assert result.ops > 500
    assert result.errors == []
    assert result.cross_scope == []
    assert result.leaks == 0
    assert result.mismatches == []
