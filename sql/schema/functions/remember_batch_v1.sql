-- API function kept for direct SQL callers (prism_memory/operations.py,
-- RETAINED_FUNCTIONS): the Python calls remember_batch_v2. It answers exactly
-- as remember_batch_v2 without expiry.
create or replace function {{schema}}.remember_batch_v1(
  p_tenant_id text, p_resource_ids text[], p_thread_ids text[],
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_now timestamptz default now())
returns table (resource_id text, thread_id text, written integer, invalidated text[])
language sql volatile security definer
set search_path from current
as $$
  select * from remember_batch_v2(p_tenant_id, p_resource_ids, p_thread_ids, p_ids, p_texts, p_embeddings, p_metadata,
                                  p_sequences, p_importance, p_consent, p_now => p_now)
$$;
