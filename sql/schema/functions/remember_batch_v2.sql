-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: remember_batch_v3 without occurred_at
-- (a stored entry keeps its own), which answers it.
create or replace function {{schema}}.remember_batch_v2(
  p_tenant_id text, p_resource_ids text[], p_thread_ids text[],
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null, p_consent jsonb[] default null,
  p_expires_at timestamptz[] default null, p_ttl interval[] default null,
  p_now timestamptz default now())
returns table (resource_id text, thread_id text, written integer, invalidated text[])
language plpgsql volatile security definer
set search_path from current
as $$
begin
  return query
    select r.resource_id, r.thread_id, r.written, r.invalidated
    from remember_batch_v3(p_tenant_id, p_resource_ids, p_thread_ids, p_ids, p_texts, p_embeddings, p_metadata,
                           p_sequences, p_importance, p_consent, p_expires_at, p_ttl, p_now) as r;
end;
$$;
