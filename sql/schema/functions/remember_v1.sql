-- API function kept for direct SQL callers (prism_memory/operations.py,
-- RETAINED_FUNCTIONS): the Python calls remember_v2. It answers exactly as
-- remember_v2 without expiry (a stored entry keeps its own).
create or replace function {{schema}}.remember_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_now timestamptz default now())
returns table (written integer, invalidated text[])
language sql volatile security definer
set search_path from current
as $$
  select * from remember_v2(p_tenant_id, p_resource_id, p_thread_id, p_ids, p_texts, p_embeddings, p_metadata,
                            p_sequences, p_importance, p_consent, p_now => p_now)
$$;
