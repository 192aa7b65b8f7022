-- prism-memory schema revision 0013: citus_recall. Recall of a thread reads
-- its tables through single-table statements on the tenant's predicate, which
-- Citus plans on its fast path (for the shard directly) where it planned the
-- former CTE-and-join statement in full on every call; plain PostgreSQL runs
-- the same statements from its own plan cache:
-- * recall_bounds_v1 (new): the thread's rows with the highest upper bounds,
--   as ctids (recall_v3's narrow first pass);
-- * recall_rescore_v1 (new): the exact scores of the rows that pass kept, by
--   a TID scan only; the thread's tombstones are read once and hashed by
--   recall_v3;
-- * recall_rows_v1 (new): the returned columns of a plain recall's hits, by
--   a TID scan only;
-- * recall_v3 reads the thread through them, never joining the kept rows back
--   by a hash join over the tenant's shard (a custom plan chose that under
--   Citus: about 6 ms), and reads the resource's own retention policy only
--   across threads, where it is used;
-- * retention_cutoff_v1 reads the policies with a statement that has no
--   subquery (same answer).
-- (prism_memory.citus.distribute, outside the revisions, sets every API
-- function to plan per call on a distributed install: docs/scaling.md.)

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/recall_bounds_v1.sql
\ir ../schema/functions/recall_rescore_v1.sql
\ir ../schema/functions/recall_rows_v1.sql
\ir ../schema/functions/recall_v3.sql
\ir ../schema/functions/retention_cutoff_v1.sql

reset search_path;
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;
