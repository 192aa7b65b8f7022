-- API function (prism_memory/operations.py; security definer, see recall_v4).
--
-- The entries of every thread of the tenant and resource (exact ids: another
-- resource, a derived one included, is never read) after the (thread_id,
-- sequence, id) cursor, in (thread_id, sequence, id) order (code-point order
-- for the texts), at most p_limit (1..200), each with its thread. With
-- p_exportable only what an export may contain: explicitly consented,
-- visible, not revoked, not held, not tombstoned, and not expired at p_now
-- (is_live_v2, under the policies of the resource and of each thread; the
-- server's clock for a tenant-bound role). A cursor is all three values or
-- none (PM005 otherwise).
-- Only the entries the selection keeps are listed (recall_selection_v1 and
-- selects_v1, as recall_v4 applies them: p_filter over the metadata, the
-- event-time and write-time windows), so paging a selection with its last
-- row's cursor lists exactly the entries it keeps; each row carries the
-- entry's event time (its occurred_at, else its created_at). PM019 a bad filter, PM008 a bound
-- out of range.
create or replace function {{schema}}.list_resource_entries_v2(
  p_tenant_id text, p_resource_id text,
  p_after_thread_id text default null, p_after_sequence bigint default null, p_after_id text default null,
  p_limit integer default 100, p_exportable boolean default false, p_now timestamptz default now(),
  p_filter jsonb default null, p_occurred_after timestamptz default null,
  p_occurred_before timestamptz default null, p_created_after timestamptz default null,
  p_created_before timestamptz default null)
returns table (thread_id text, id text, text text, metadata jsonb, sequence bigint, importance double precision,
               consent_source text, consent_scope text, consent_visible boolean,
               consent_granted_at timestamptz, consent_revoked_at timestamptz, legal_hold boolean,
               created_at timestamptz, updated_at timestamptz, occurred_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_resource_cutoff timestamptz;
  v_selection {{schema}}.selection_v1 := recall_selection_v1(p_filter, p_occurred_after, p_occurred_before,
                                                             p_created_after, p_created_before);
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- expiry is measured against it
  perform assert_scope_v2(p_tenant_id, p_resource_id, null, false);
  perform assert_resource_cursor_v1(p_after_thread_id, p_after_sequence, p_after_id);
  if p_limit is null or p_limit not between 1 and 200 then
    raise exception 'limit must be between 1 and 200, got %', p_limit using errcode = 'PM005';
  end if;
  if p_exportable is null then
    raise exception 'exportable must be true or false' using errcode = 'PM005';
  end if;
  v_resource_cutoff := retention_cutoff_v1(p_tenant_id, p_resource_id, null, p_now);
  return query
    select e.thread_id, e.id, e.text, e.metadata, e.sequence, e.importance, e.consent_source, e.consent_scope,
           e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold, e.created_at, e.updated_at,
           coalesce(e.occurred_at, e.created_at)
    from {{entries}} e
    left join {{retention_policy}} tp  -- a policy of the entry's own thread
      on tp.tenant_id = p_tenant_id and tp.resource_id = p_resource_id and tp.thread_id = e.thread_id
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and (p_after_thread_id is null
           or (e.thread_id collate "C", e.sequence, e.id collate "C")
              > (p_after_thread_id collate "C", p_after_sequence, p_after_id collate "C"))
      and selects_v1(e.metadata, e.occurred_at, e.created_at, v_selection)
      and (not p_exportable
           or (is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source, true)
               and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
                              greatest(v_resource_cutoff, p_now - tp.max_age_days * interval '24 hours'), p_now)
               and not exists (select 1 from {{invalidation}} i
                               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                                 and i.thread_id = e.thread_id and i.entry_id = e.id)))
    order by e.thread_id collate "C", e.sequence, e.id collate "C"
    limit p_limit;
end;
$$;
