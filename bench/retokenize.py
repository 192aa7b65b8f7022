"""What revision 0010 (tokenizer v2) costs on a large install: the time of the upgrade and how long the
tables stay locked.

Migrates a fresh schema to revision 0009, loads ``--entries`` entries (and ``--chunks`` RAG chunks) with
real text (LoCoMo's turns, cycled, each made distinct by a suffix; a built-in sentence list without the
file) and ``--dimensions``-wide embeddings (the same for every entry: no index reads them; random for the
chunks, whose HNSW index the rewrite rebuilds), written by ``insert ... select`` (their ``text_tsv`` computed by
the v1 tokenizer), vacuumed and analyzed. Then ``migrate()`` runs revision 0010, which drops and re-adds
``text_tsv`` on both tables (each table rewritten once, every index rebuilt, then the GIN index on
``text_tsv`` built), all in one transaction: each table is under an ACCESS EXCLUSIVE lock from its first
``alter table`` to the commit. A probe connection reads one row of each table every 50 ms during the
upgrade; ``*_read_blocked_s`` is the longest a read waited, what a recall (entries) or a RAG query (chunks)
waits at worst. ``upgrade_s`` is the whole upgrade, timed from the client.

    .venv/bin/python bench/retokenize.py --entries 100000
    .venv/bin/python bench/retokenize.py --entries 1000000 --chunks 100000

The last stdout line is one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path

import psycopg
from prism_memory.schema import SchemaConfig, migrate
from psycopg import sql

from _common import REPO_ROOT, emit, local_postgres, log, scratch_schema

LOCOMO = Path(os.environ.get("PRISM_LOCOMO_PATH", REPO_ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))
#: Used when the LoCoMo file is absent.
SENTENCES = [
    "Tokens expire after 30 minutes, so the client refreshes them in the background",
    "We went hiking near Lisbon last weekend and the weather was perfect",
    "My sister is starting a new job as an architect in Osaka next month",
    "The quarterly budget review moved to Thursday afternoon",
    "I have been learning to play the guitar for about two years now",
]


def texts() -> list[str]:
    """The texts entries are made of: every LoCoMo turn, or :data:`SENTENCES`."""
    if not LOCOMO.is_file():
        return SENTENCES
    samples = json.loads(LOCOMO.read_text())
    return [turn["text"] for sample in samples for key, turns in sample["conversation"].items()
            if key.startswith("session_") and isinstance(turns, list) for turn in turns]


def load(dsn: str, config: SchemaConfig, entries: int, chunks: int) -> None:
    """Write ``entries`` entries (100 per thread, 1,000 tenants) and ``chunks`` chunks (one scope per tenant)."""
    names = config.names
    vector = "[" + ",".join(["0.0625"] * config.dimensions) + "]"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("create temporary table sample (n integer primary key, text text not null)")
        with conn.cursor().copy("copy sample (n, text) from stdin") as copy:
            for number, text in enumerate(texts()):
                copy.write_row((number, text))
        started = time.perf_counter()
        conn.execute(sql.SQL(
            "insert into {} (tenant_id, resource_id, thread_id, id, text, embedding, sequence) "
            "select 'tenant-' || mod(i, 1000), 'user', 'thread-' || (i / 100), 'e' || i, s.text || ' #' || i, %s::vector, i "
            "from generate_series(0, %s - 1) as i join sample s on s.n = mod(i, (select count(*) from sample)::integer)"
        ).format(sql.SQL(names["entries"])), (vector, entries))
        conn.execute(sql.SQL(
            "insert into {} (tenant_id, scope, generation, id, source_id, text, embedding) "
            "select 'tenant-' || mod(i, 1000), 'kb', 0, 'c' || i, 'doc-' || (i / 10), s.text || ' #' || i, "
            "(select array_agg(random() + 0 * (g + i)) from generate_series(1, %s) as g)::vector "  # random: HNSW builds as on real data
            "from generate_series(0, %s - 1) as i join sample s on s.n = mod(i, (select count(*) from sample)::integer)"
        ).format(sql.SQL(names["rag_chunk"])), (config.dimensions, chunks))
        log(f"loaded {entries} entries and {chunks} chunks in {time.perf_counter() - started:.1f} s")
        for key in ("entries", "rag_chunk"):
            conn.execute(sql.SQL("vacuum analyze {}").format(sql.SQL(names[key])))


class Probe:
    """Reads one row of each table every ``interval`` seconds, each table on a connection of its own; keeps the
    longest wait per table."""

    def __init__(self, dsn: str, config: SchemaConfig, interval: float = 0.05) -> None:
        self.dsn, self.config, self.interval = dsn, config, interval
        self.longest = {key: 0.0 for key in ("entries", "rag_chunk")}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=(key,), daemon=True) for key in self.longest]

    def _run(self, key: str) -> None:
        query = sql.SQL("select 1 from {} limit 1").format(sql.SQL(self.config.names[key]))
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            while not self._stop.is_set():
                started = time.perf_counter()
                conn.execute(query).fetchall()
                self.longest[key] = max(self.longest[key], time.perf_counter() - started)
                time.sleep(self.interval)

    def __enter__(self) -> Probe:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="a local Postgres URL (default: a throw-away embedded server)")
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--chunks", type=int, default=0)
    parser.add_argument("--dimensions", type=int, default=384, help="pinned width (chunks get an HNSW index up to 2,000)")
    arguments = parser.parse_args()
    with local_postgres(arguments.dsn) as dsn, scratch_schema(dsn, "retokenize") as schema:
        config = SchemaConfig(schema=schema, dimensions=arguments.dimensions)
        migrate(dsn, config, "0009")
        load(dsn, config, arguments.entries, arguments.chunks)
        with psycopg.connect(dsn) as conn:
            sizes = {key: conn.execute("select pg_total_relation_size(%s)", (config.names[key],)).fetchone()[0]
                     for key in ("entries", "rag_chunk")}
        log("migrating to head (revision 0010 rewrites text_tsv)")
        with Probe(dsn, config) as probe:
            time.sleep(0.2)
            started = time.perf_counter()
            migrate(dsn, config)
            upgrade_s = time.perf_counter() - started
            time.sleep(0.2)
        emit({
            "entries": arguments.entries,
            "chunks": arguments.chunks,
            "dimensions": arguments.dimensions,
            "entries_mb_before": round(sizes["entries"] / 2**20, 1),
            "chunks_mb_before": round(sizes["rag_chunk"] / 2**20, 1),
            "upgrade_s": round(upgrade_s, 2),
            "entries_read_blocked_s": round(probe.longest["entries"], 2),
            "chunks_read_blocked_s": round(probe.longest["rag_chunk"], 2),
        })


if __name__ == "__main__":
    main()
