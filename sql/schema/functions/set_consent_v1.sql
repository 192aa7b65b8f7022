-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: set_consent_v2 less its record's
-- occurred_at, which answers it.
create or replace function {{schema}}.set_consent_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_visible boolean default null, p_source text default null, p_scope text default null,
  p_granted_at timestamptz default null, p_revoked_at timestamptz default null,
  p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile security definer
set search_path from current
as $$
begin
  return query
    select r.id, r.text, r.metadata, r.sequence, r.importance, r.consent_source, r.consent_scope, r.consent_visible,
           r.consent_granted_at, r.consent_revoked_at, r.legal_hold, r.created_at, r.updated_at, r.invalidated
    from set_consent_v2(p_tenant_id, p_resource_id, p_thread_id, p_entry_id, p_visible, p_source, p_scope,
                        p_granted_at, p_revoked_at, p_now) as r;
end;
$$;
