-- prism-memory schema revision 0012: resource. Recall across a user's threads
-- as far as consent allows, the resource-wide lifecycle, and expiry enforced
-- at read time:
-- * recall_v3 (new): recall_v2's arguments plus p_across_threads, which
--   searches every thread of the tenant and resource: the thread's own entries
--   and, from its other threads, those whose consent scope lets them leave
--   (leaves_thread_v1, new: 'profile' or 'user'; legacy entries stay); each
--   source gives its best candidates (type recall_candidate_v1, new);
-- * recall_v2 answers through recall_v3's body (p_across_threads false);
-- * list_resource_entries_v1, count_resource_entries_v1 (new): a resource's
--   entries across its threads, by a (thread, sequence, id) cursor
--   (assert_resource_cursor_v1, new), and their count;
-- * invalidate_resource_v1, purge_resource_v1 (new): erase a resource in
--   bounded, resumable batches (tombstones first, then bodies; holds kept),
--   or sweep what has expired in it (p_expired_only);
-- * expiry: entries.expires_at (new column, remember_v2 / remember_batch_v2:
--   p_expires_at or p_ttl) and stored retention policies per resource or
--   thread (<table>_retention_policy, new; set_retention_policy_v1,
--   get_retention_policy_v1), enforced the moment they pass by recall, export
--   (list_entries_v2) and the sweep (retention_candidates_v2), through
--   retention_cutoff_v1 and is_live_v1 (new); remember_v1, remember_batch_v1
--   and list_entries_v1 answer through their v2 bodies; explain counts an
--   'expiry' gate.
-- * recall_v3 also takes the embedder's model id (p_model_id) and checks it in
--   the same call, as recall_guarded_v1 (revision 0011) did, which it retires;
--   across threads it leaves out the threads another model of the width wrote.
-- * assert_embedding_model_v1 names recall_v3 in its comment;
-- * the reads that measure expiry refuse a NULL or out-of-range p_now
--   (assert_now_v1, new: PM002).

{{pin_search_path}}

alter table {{entries}} add column expires_at timestamptz;
create table {{retention_policy}} (
  tenant_id    text             not null,
  resource_id  text             not null,
  thread_id    text             not null default '',
  max_age_days double precision not null check (max_age_days between 0 and 36500),
  created_at   timestamptz      not null default now(),
  updated_at   timestamptz      not null default now(),
  primary key (tenant_id, resource_id, thread_id)
);
alter table {{retention_policy}} enable row level security;
create policy tenant_isolation on {{retention_policy}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

create type {{schema}}.recall_candidate_v1 as (
  row_id tid, resource_id text, thread_id text, id text, sequence bigint, importance double precision,
  created_at timestamptz, similarity double precision, lexical double precision);

create type {{schema}}.recall_probe_v1 as (
  row_id tid, resource_id text, thread_id text, id text, sequence bigint, importance double precision,
  created_at timestamptz, similarity double precision, text_tsv tsvector, expires_at timestamptz);
create index {{entries_travel_idx}} on {{entries}} (tenant_id, resource_id, thread_id)
  where coalesce(consent_scope in ('profile', 'user'), false);


\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/assert_now_v1.sql
\ir ../schema/functions/assert_resource_cursor_v1.sql
\ir ../schema/functions/count_resource_entries_v1.sql
\ir ../schema/functions/get_retention_policy_v1.sql
\ir ../schema/functions/invalidate_resource_v1.sql
\ir ../schema/functions/is_live_v1.sql
\ir ../schema/functions/leaves_thread_v1.sql
\ir ../schema/functions/list_entries_v2.sql
\ir ../schema/functions/list_resource_entries_v1.sql
\ir ../schema/functions/purge_resource_v1.sql
\ir ../schema/functions/recall_top_v1.sql
\ir ../schema/functions/recall_v3.sql
\ir ../schema/functions/remember_batch_v2.sql
\ir ../schema/functions/remember_v2.sql
\ir ../schema/functions/retention_candidates_v2.sql
\ir ../schema/functions/retention_cutoff_v1.sql
\ir ../schema/functions/set_retention_policy_v1.sql
\ir ../schema/functions/assert_embedding_model_v1.sql
\ir ../schema/functions/list_entries_v1.sql
\ir ../schema/functions/recall_v2.sql
\ir ../schema/functions/remember_batch_v1.sql
\ir ../schema/functions/remember_v1.sql
drop function {{schema}}.recall_guarded_v1(text, text, text, text, integer, vector, text, integer, integer, boolean, text,
                                          timestamptz, double precision, double precision, double precision, boolean);
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
