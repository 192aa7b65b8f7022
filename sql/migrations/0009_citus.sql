-- prism-memory schema revision 0009: citus. Bodies that run on a Citus
-- cluster (tables distributed by tenant_id, API functions delegated by their
-- tenant: prism_memory.citus.distribute) and answer exactly as before on
-- plain PostgreSQL:
-- * no parameter or now() in ON CONFLICT DO UPDATE (Citus refuses them):
--   remember_v1, rag_upsert_v1 and rag_set_generation_v1 take excluded's
--   stamp; update_working_v1 updates the locked record, else inserts;
-- * citus_installed_v1 (new) tells the bodies they may run under Citus;
-- * recall_v2 joins its hits back by tenant and ctid (ctids repeat across
--   shards: without the tenant it read other tenants' rows), and plans each
--   call under Citus (a generic plan cannot be routed);
-- * rag_query_v1 counts filtered candidates under Citus (an EXPLAIN
--   inside a delegated call breaks the next statement);
-- * lock_key_v1 (new) takes the per-thread and per-scope advisory locks
--   (lock_thread_v1, remember_batch_v1, rag_upsert_v1), and under Citus
--   refuses (PM017) a call that runs on a node without the tenant's shards,
--   where its lock would exclude none of the tenant's other writers;
-- * tombstone_from_sources_v1 has a string body (Citus propagates no
--   BEGIN ATOMIC body to workers).

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/citus_installed_v1.sql
\ir ../schema/functions/lock_key_v1.sql
\ir ../schema/functions/lock_thread_v1.sql
\ir ../schema/functions/rag_query_v1.sql
\ir ../schema/functions/rag_set_generation_v1.sql
\ir ../schema/functions/rag_upsert_v1.sql
\ir ../schema/functions/recall_v2.sql
\ir ../schema/functions/remember_batch_v1.sql
\ir ../schema/functions/remember_v1.sql
\ir ../schema/functions/tombstone_from_sources_v1.sql
\ir ../schema/functions/update_working_v1.sql
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
