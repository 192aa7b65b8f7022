-- API function kept for direct SQL callers (prism_memory/operations.py,
-- RETAINED_FUNCTIONS): the Python calls recall_v3. It answers exactly as
-- recall_v3 with p_across_threads false (one thread, plus the entries a live
-- share grant from p_share_parent_thread_id lets it read): the same rows,
-- ranks, scores, gates and errors, from the same body.
create or replace function {{schema}}.recall_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_query_embedding vector, p_query_text text default '',
  p_top_k integer default 8, p_message_range integer default 0,
  p_require_consent boolean default false, p_share_parent_thread_id text default null,
  p_now timestamptz default now(),
  p_recency_weight double precision default null, p_importance_weight double precision default null,
  p_half_life_ms double precision default null, p_explain boolean default false)
returns table (kind text, rank integer, resource_id text, thread_id text, id text, text text,
               metadata jsonb, sequence bigint, importance double precision,
               similarity double precision, lexical double precision, recency double precision,
               score double precision, created_at timestamptz, updated_at timestamptz)
language sql stable security definer
set search_path from current
as $$
  select * from recall_v3(
    p_tenant_id => p_tenant_id, p_resource_id => p_resource_id, p_thread_id => p_thread_id,
    p_query_embedding => p_query_embedding, p_query_text => p_query_text, p_top_k => p_top_k,
    p_message_range => p_message_range, p_require_consent => p_require_consent,
    p_share_parent_thread_id => p_share_parent_thread_id, p_across_threads => false, p_now => p_now,
    p_recency_weight => p_recency_weight, p_importance_weight => p_importance_weight,
    p_half_life_ms => p_half_life_ms, p_explain => p_explain)
$$;
