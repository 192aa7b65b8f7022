-- API function (prism_memory/operations.py; security definer, see recall_v4).
--
-- Entries of the thread after the (sequence, id) cursor, in (sequence, id)
-- order, at most p_limit (1..200). With p_exportable only what an export may
-- contain: explicitly consented, visible, not revoked, not held, not
-- tombstoned, and not expired at p_now (is_live_v2; the server's clock for a
-- tenant-bound role).
-- Only the entries the selection keeps are listed (recall_selection_v1 and
-- selects_v1, as recall_v4 applies them: p_filter over the metadata, the
-- event-time and write-time windows), so paging a selection with its last
-- row's cursor lists exactly the entries it keeps; each row carries the
-- entry's event time (its occurred_at, else its created_at). PM019 a bad filter, PM008 a bound
-- out of range.
create or replace function {{schema}}.list_entries_v3(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false, p_now timestamptz default now(),
  p_filter jsonb default null, p_occurred_after timestamptz default null,
  p_occurred_before timestamptz default null, p_created_after timestamptz default null,
  p_created_before timestamptz default null)
returns setof {{schema}}.entry_record_v2
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_cutoff timestamptz;
  v_selection {{schema}}.selection_v1 := recall_selection_v1(p_filter, p_occurred_after, p_occurred_before,
                                                             p_created_after, p_created_before);
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- expiry is measured against it
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_limit is null or p_limit not between 1 and 200 then
    raise exception 'limit must be between 1 and 200, got %', p_limit using errcode = 'PM005';
  end if;
  v_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, p_thread_id, p_now);
  return query
    select e.id, e.text, e.metadata, e.sequence, e.importance, e.consent_source, e.consent_scope,
           e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold,
           e.created_at, e.updated_at, '{}'::text[],
           coalesce(e.occurred_at, e.created_at)
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and (p_after_sequence is null
           or (e.sequence, e.id collate "C") > (p_after_sequence, p_after_id collate "C"))
      and selects_v1(e.metadata, e.occurred_at, e.created_at, v_selection)
      and (not p_exportable
           or (is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source, true)
               and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at, v_cutoff, p_now)
               and not exists (select 1 from {{invalidation}} i
                               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                 and i.thread_id = p_thread_id and i.entry_id = e.id)))
    order by e.sequence, e.id collate "C"
    limit p_limit;
end;
$$;
