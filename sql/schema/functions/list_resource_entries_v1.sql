-- API function (prism_memory/operations.py; security definer, see recall_v4),
-- kept for the callers of the release before: list_resource_entries_v2 with
-- no selection, less its occurred_at column, which answers it.
create or replace function {{schema}}.list_resource_entries_v1(
  p_tenant_id text, p_resource_id text,
  p_after_thread_id text default null, p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false, p_now timestamptz default now())
returns table (thread_id text, id text, text text, metadata jsonb, sequence bigint, importance double precision,
               consent_source text, consent_scope text, consent_visible boolean,
               consent_granted_at timestamptz, consent_revoked_at timestamptz, legal_hold boolean,
               created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
begin
  return query
    select r.thread_id, r.id, r.text, r.metadata, r.sequence, r.importance, r.consent_source, r.consent_scope,
           r.consent_visible, r.consent_granted_at, r.consent_revoked_at, r.legal_hold, r.created_at, r.updated_at
    from list_resource_entries_v2(p_tenant_id, p_resource_id, p_after_thread_id, p_after_sequence, p_after_id,
                                  p_limit, p_exportable, p_now) as r;
end;
$$;
