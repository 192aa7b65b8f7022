-- Entries of the thread after the (sequence, id) cursor, in (sequence, id)
-- order, at most p_limit (1..200). With p_exportable only what an export may
-- contain: explicitly consented, visible, not revoked, not held, not
-- tombstoned.
create or replace function {{schema}}.list_entries_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false)
returns setof {{schema}}.entry_record_v1
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_limit is null or p_limit not between 1 and 200 then
    raise exception 'limit must be between 1 and 200, got %', p_limit using errcode = 'PM005';
  end if;
  return query
    select e.id, e.text, e.metadata, e.sequence, e.importance, e.consent_source, e.consent_scope,
           e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold,
           e.created_at, e.updated_at, '{}'::text[]
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and (p_after_sequence is null
           or (e.sequence, e.id collate "C") > (p_after_sequence, p_after_id collate "C"))
      and (not p_exportable
           or (is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source, true)
               and not exists (select 1 from {{invalidation}} i
                               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                 and i.thread_id = p_thread_id and i.entry_id = e.id)))
    order by e.sequence, e.id collate "C"
    limit p_limit;
end;
$$;
