-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: correct_v3 less its record's
-- occurred_at, which answers it.
create or replace function {{schema}}.correct_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_text text, p_embedding vector, p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile security definer
set search_path from current
as $$
begin
  return query
    select r.id, r.text, r.metadata, r.sequence, r.importance, r.consent_source, r.consent_scope, r.consent_visible,
           r.consent_granted_at, r.consent_revoked_at, r.legal_hold, r.created_at, r.updated_at, r.invalidated
    from correct_v3(p_tenant_id, p_resource_id, p_thread_id, p_entry_id, p_text, p_embedding, p_now) as r;
end;
$$;
