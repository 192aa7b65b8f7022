-- prism-memory schema revision 0008: tenancy, snapshot share grants, bounded queries.
--
-- * Tenant-bound roles: <table>_tenant_binding lists the tenants a database
--   role (by OID; with every role that is a member of it) may act for. Every
--   API function first calls tenant_access_v1, which refuses any other tenant
--   (PM016) and gives such a role the server's clock instead of its p_now.
--   Roles with no binding keep their access.
-- * Writers refuse any isolation level but READ COMMITTED (lock_thread_v1,
--   PM017): under REPEATABLE READ the per-thread lock came after the
--   snapshot, so a writer could miss the tombstone or grant committed before it.
-- * A share grant shares the entries as they are when it is made: only ids
--   the parent thread holds are granted, and a later write under a granted
--   id (remember_v1, correct_v2), like its deletion (purge_v1), takes it out
--   of the grant (unshare_v1). The child's resource must be the parent's own
--   or a delegated agent's (PM001).
-- * A query is scored by its first 32 distinct terms (query_terms_v1), in
--   recall_v2 and rag_lexical_query_v1, which bounds a query's cost; recall_v2
--   refuses a blank query (PM008).
-- 0008_tenancy.schema.diff shows every function change.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
create table {{tenant_binding}} (
  tenant_id  text        not null,
  role_oid   oid         not null,
  created_at timestamptz not null default now(),
  primary key (tenant_id, role_oid)
);
create index {{tenant_binding_role_idx}} on {{tenant_binding}} (role_oid, tenant_id);
alter table {{tenant_binding}} enable row level security;
create policy tenant_isolation on {{tenant_binding}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

\ir ../schema/functions/tenant_access_v1.sql
\ir ../schema/functions/query_terms_v1.sql
\ir ../schema/functions/unshare_v1.sql
\ir ../schema/functions/correct_v2.sql
\ir ../schema/functions/count_entries_v1.sql
\ir ../schema/functions/get_working_v1.sql
\ir ../schema/functions/invalidate_v1.sql
\ir ../schema/functions/lock_thread_v1.sql
\ir ../schema/functions/list_entries_v1.sql
\ir ../schema/functions/purge_v1.sql
\ir ../schema/functions/rag_check_source_access_v1.sql
\ir ../schema/functions/rag_delete_v1.sql
\ir ../schema/functions/rag_get_by_source_v1.sql
\ir ../schema/functions/rag_get_generation_v1.sql
\ir ../schema/functions/rag_lexical_query_v1.sql
\ir ../schema/functions/rag_query_v1.sql
\ir ../schema/functions/rag_set_generation_v1.sql
\ir ../schema/functions/rag_set_source_access_v1.sql
\ir ../schema/functions/rag_upsert_v1.sql
\ir ../schema/functions/recall_v2.sql
\ir ../schema/functions/reembed_v1.sql
\ir ../schema/functions/remember_batch_v1.sql
\ir ../schema/functions/remember_v1.sql
\ir ../schema/functions/retention_candidates_v1.sql
\ir ../schema/functions/set_consent_v1.sql
\ir ../schema/functions/share_with_v1.sql
\ir ../schema/functions/update_working_v1.sql
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
