-- prism-memory schema revision 0006: scale (issue 7).
--
-- remember_batch_v1: bulk ingest sends one tenant's entries for many threads
-- in one call instead of one call per thread; each thread's rows are written
-- by remember_v1, so every rule of a single remember (validation, sequences,
-- consent, lineage tombstones) holds unchanged.
--
-- recall_v2, same contract, new body and plan settings. A generic plan
-- expects a few rows per thread, so on a large thread it read the thread
-- through an index scan, merge-joined the tombstones, and joined each hit back
-- to its entry through the scope index (a scan of the thread per hit). Now
-- the hit and adjacent rows are joined back by ctid (the row scored, in the
-- same snapshot), and plain index scans and merge joins are off inside the
-- function: the thread is read by a bitmap scan and the tombstones are
-- hashed, which halves the cost of a 5,000-entry thread. Plain recall (no
-- scoring, grants, adjacency or explain) runs a statement a third the size,
-- which takes about 0.2 ms off every call.
--
-- invalidate_v1, same contract: each step of the lineage walk tested every
-- entry of the thread once per frontier id (up to 64); now once per step.
-- Template rules as in 0001; frozen once released.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql

\ir ../schema/functions/remember_batch_v1.sql

revoke execute on function {{schema}}.remember_batch_v1(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz) from public;
alter function {{schema}}.remember_batch_v1(text, text[], text[], text[], text[], vector[], jsonb[], bigint[], double precision[], jsonb[], timestamptz) security definer;

\ir ../schema/functions/invalidate_v1.sql

\ir ../schema/functions/recall_v2.sql

reset search_path;
