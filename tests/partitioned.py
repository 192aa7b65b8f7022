"""A Citus-like install on one plain PostgreSQL server: every tenant table hash-partitioned by tenant_id.

On a Citus cluster the tenant tables are sharded by ``tenant_id``
(:data:`prism_memory.citus.DISTRIBUTED_TABLES`). A statement on such a table
without the tenant predicate runs on every shard, and whatever it matches by a
shard-local value (a ``ctid``, above all) matches other tenants' rows too:
``recall_v2`` joined its hits back to the entries by ``ctid`` alone, and tenant
B's recall returned tenant A's rows. On one plain table ctids are unique, so
no ordinary test can see that. Here each tenant table is a table partitioned
``by hash (tenant_id)`` into :data:`MODULUS` partitions: every partition
numbers its tuples from ``(0,1)``, exactly as every shard does, and a
statement without the tenant predicate scans every partition, as it does
every shard.

:func:`partitioned_install_ddl` renders the head install
(:func:`prism_memory.schema.build_memory_ddl`, then the vector-search part)
with each ``create table`` of a distributed table turned into a partitioned
table plus its partitions; indexes, statistics, storage settings and RLS
policies are then created on the partitioned table as the DDL writes them
(PostgreSQL cascades them to the partitions). :func:`install_partitioned`
applies it and checks the result: every tenant table partitioned (so a tenant
table added later that this rendering misses fails loudly), nothing else.
:func:`as_unpartitioned` reads such an install's catalog as the normal
install's (the tests compare them). :class:`PartitionReads` tells which
partitions a call read, from the server's table statistics: a call for one
tenant that reads another tenant's partition ran a statement without the
tenant predicate, even when no wrong row came back.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import psycopg
from prism_memory.citus import DISTRIBUTED_TABLES, REFERENCE_TABLES
from prism_memory.schema import SchemaConfig, build_memory_ddl, build_vector_search_ddl, quote_identifier

#: Partitions per tenant table. The two test tenants must land in different ones (checked by the tests):
#: with 3, acme is in remainder 2 and acme-corp in remainder 1 (2, 4, 5 and 8 would put them together).
MODULUS = 3

_CREATE_TABLE = re.compile(r"create table (?P<name>\S+) \((?P<body>.*?)\n\);", re.DOTALL)


def partition_names(config: SchemaConfig, key: str) -> list[str]:
    """The qualified, quoted partitions of the table ``config.names[key]``."""
    schema = quote_identifier(config.schema)
    return [f"{schema}.{quote_identifier(_table_name(config, key) + f'_p{remainder}')}" for remainder in range(MODULUS)]


def _table_name(config: SchemaConfig, key: str) -> str:
    suffix = {"entries": ""}.get(key, "_" + key)
    return config.table + suffix


def partitioned_install_ddl(config: SchemaConfig) -> str:
    """The head install DDL with every tenant table hash-partitioned by tenant_id into :data:`MODULUS` partitions."""
    names = config.names
    distributed = {names[key]: key for key in DISTRIBUTED_TABLES}
    found: list[str] = []

    def partition(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in distributed:
            return match.group(0)
        found.append(name)
        # No autovacuum: its reads would count in the partition statistics PartitionReads watches.
        partitions = "".join(
            f"\ncreate table {part} partition of {name} for values with (modulus {MODULUS}, remainder {remainder})"
            " with (autovacuum_enabled = false);"
            for remainder, part in enumerate(partition_names(config, distributed[name]))
        )
        return f"{match.group(0)[:-1]} partition by hash (tenant_id);{partitions}"

    ddl = _CREATE_TABLE.sub(partition, build_memory_ddl(config.schema, config.table, config.dimensions))
    missing = sorted(set(distributed) - set(found))
    assert not missing, f"the head DDL creates no table {missing}: tests/partitioned.py's rendering is out of date"
    return ddl + build_vector_search_ddl(config.schema, config.table, config.dimensions)


#: The name in a catalog row (tests/catalog.py) of a partition or of its columns, constraints or
#: policies; and an index definition on a partition (whose name PostgreSQL chose, maybe truncated).
_PARTITION_ROW = re.compile(r"_p\d+(\.|$)")
_PARTITION_INDEX = re.compile(r" ON \S+_p\d+ USING ")


def as_unpartitioned(rows: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """A partitioned install's catalog rows (tests/catalog.py) as the normal install would have them.

    Drops the partitions' rows and reads a partitioned table (``kind=p``) and
    its indexes (``ON ONLY``) as plain ones; what remains must equal the normal
    install's catalog.
    """
    return sorted(
        (kind, name, definition.replace("kind=p ", "kind=r ", 1) if kind == "table"
         else definition.replace(" ON ONLY ", " ON ", 1) if kind == "index" else definition)
        for kind, name, definition in rows
        if not _PARTITION_ROW.search(name) and not (kind == "index" and _PARTITION_INDEX.search(definition))
    )


def install_partitioned(dsn: str, config: SchemaConfig) -> None:
    """Install the head schema at ``dsn`` (an empty database) with partitioned tenant tables, and check it."""
    names = config.names
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(partitioned_install_ddl(config))
        rows = conn.execute(
            """
            select c.oid::regclass::text, c.relkind::text,
                   exists (select 1 from pg_attribute a
                           where a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped)
            from pg_class c join pg_namespace n on n.oid = c.relnamespace
            where n.nspname = %s and c.relkind in ('r', 'p') and not c.relispartition
            """,
            (config.schema,),
        ).fetchall()

        def regclass(keys) -> set[str]:
            return {conn.execute("select %s::regclass::text", (names[key],)).fetchone()[0] for key in keys}

        expected, unshardable = regclass(DISTRIBUTED_TABLES), regclass(REFERENCE_TABLES)
    partitioned = {name for name, kind, _ in rows if kind == "p"}
    assert partitioned == expected, f"partitioned {sorted(partitioned)}, expected {sorted(expected)}"
    # A tenant table the head adds (and citus.DISTRIBUTED_TABLES does not list yet) must not slip through.
    plain_tenant_tables = {name for name, kind, tenant in rows if kind == "r" and tenant} - unshardable
    assert not plain_tenant_tables, f"tenant tables left unpartitioned: {sorted(plain_tenant_tables)}"


class PartitionReads:
    """Which partitions of the tenant tables a call read, from the server's per-table statistics.

    A statement with ``tenant_id = p_tenant_id`` reads one partition (the
    others are pruned, at plan time or, in a generic plan, before execution
    starts); one without it reads every partition, whether or not it then
    returns another tenant's rows (a statement that also names the caller's
    resource and thread returns none, but on Citus it still runs on every
    shard, and a ctid or other shard-local value it carries means nothing
    there). So a call for one tenant must leave the statistics of every other
    partition unchanged: no sequential or index scan started, no heap block
    read (a fetch by ctid counts here), no tuple written. Index block reads
    are not counted: the planner reads the index metapages of every partition
    a plan covers, pruned later or not.

    Statistics reach the shared counters when a backend flushes them:
    :meth:`flush` makes the pool's connections do so (run it with a pool of
    one connection, so that every call's backend is flushed).
    """

    COUNTERS = ("seq_scan", "idx_scan", "heap_blocks", "tuples_written")

    def __init__(self, dsn: str, config: SchemaConfig, tenants: Sequence[str]) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        names = config.names
        #: partition oid -> its name.
        self.names: dict[int, str] = {}
        #: (tenant, partition oid) -> whether that tenant's rows live in that partition.
        self.home: dict[tuple[str, int], bool] = {}
        for key in DISTRIBUTED_TABLES:
            parent = self.conn.execute("select %s::regclass::oid", (names[key],)).fetchone()[0]
            for partition, name in self.conn.execute(
                    "select inhrelid, inhrelid::regclass::text from pg_inherits where inhparent = %s", (parent,)).fetchall():
                self.names[partition] = name
                for tenant in tenants:
                    # satisfies_hash_partition(parent, modulus, remainder, value): the routing test itself.
                    bound = self.conn.execute(
                        "select pg_get_expr(relpartbound, oid) from pg_class where oid = %s", (partition,)).fetchone()[0]
                    modulus, remainder = map(int, re.findall(r"\d+", bound))
                    self.home[tenant, partition] = self.conn.execute(
                        "select satisfies_hash_partition(%s::oid, %s, %s, %s::text)",
                        (parent, modulus, remainder, tenant)).fetchone()[0]

    def close(self) -> None:
        self.conn.close()

    @staticmethod
    async def flush(pool) -> None:
        """Make the connection of ``pool`` (a pool of one) flush its pending statistics now."""
        assert pool.max_size == 1, "PartitionReads needs a pool of one connection"
        async with pool.connection() as conn:
            # The backend flushes when it next goes idle, before it answers ready-for-query.
            await conn.execute("select pg_catalog.pg_stat_force_next_flush()")

    def counters(self) -> dict[int, tuple[int, ...]]:
        rows = self.conn.execute(
            """
            select s.relid, coalesce(s.seq_scan, 0), coalesce(s.idx_scan, 0),
                   coalesce(io.heap_blks_read, 0) + coalesce(io.heap_blks_hit, 0),
                   s.n_tup_ins + s.n_tup_upd + s.n_tup_del
            from pg_catalog.pg_stat_all_tables s join pg_catalog.pg_statio_all_tables io using (relid)
            where s.relid = any(%s)
            """,
            (list(self.names),),
        ).fetchall()
        return {row[0]: tuple(row[1:]) for row in rows}

    def foreign_reads(self, tenant: str, before: dict[int, tuple[int, ...]], after: dict[int, tuple[int, ...]]) -> dict[str, dict[str, int]]:
        """The partitions outside ``tenant``'s home whose counters moved between two :meth:`counters`."""
        moved = {}
        for oid, counts in after.items():
            if not self.home[tenant, oid]:
                delta = {name: now - then for name, now, then in zip(self.COUNTERS, counts, before[oid]) if now != then}
                if delta:
                    moved[self.names[oid]] = delta
        return moved
