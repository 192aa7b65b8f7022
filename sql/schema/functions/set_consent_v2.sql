-- Grants or revokes consent on one entry without re-embedding. NULL leaves a
-- field as it is. Revoking (p_visible false, or p_revoked_at given) writes the
-- tombstones first (invalidate_v1 'revoked'); granting (p_visible true) clears
-- the entry's tombstone and its revoked_at, unless one of its own sources is
-- still invalid (dependents stay invalidated: regenerate them from the
-- remaining evidence), or the tombstone is an erasure's (deleted, expired,
-- held): a forget or retention sweep tombstones first and deletes after, and
-- a grant in between, or after an erasure that stopped there, must not bring
-- the entry back. A legacy entry
-- becomes explicitly consented (source user, scope thread unless given).
-- Returns the entry's record (entry_record_v2: with its occurred_at) and the
-- ids invalidated.
create or replace function {{schema}}.set_consent_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_visible boolean default null, p_source text default null, p_scope text default null,
  p_granted_at timestamptz default null, p_revoked_at timestamptz default null,
  p_now timestamptz default now())
returns setof {{schema}}.entry_record_v2
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_revoking boolean := p_visible is false or p_revoked_at is not null;
  v_granting boolean := p_visible is true and p_revoked_at is null;
  v_invalidated text[] := '{}';
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if p_source is not null and p_source not in ('user', 'agent', 'system') then
    raise exception 'consent source must be user, agent or system, got %', p_source using errcode = 'PM002';
  end if;
  if p_scope is not null and p_scope not in ('thread', 'profile', 'user') then
    raise exception 'consent scope must be thread, profile or user, got %', p_scope using errcode = 'PM002';
  end if;
  perform assert_time_v1(p_granted_at, 'granted_at'), assert_time_v1(p_revoked_at, 'revoked_at');
  perform 1 from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id
  for update;
  if not found then
    raise exception 'no entry % in this thread', p_entry_id using errcode = 'PM011';
  end if;
  if v_revoking then
    v_invalidated := array(select x.entry_id
                           from invalidate_v1(p_tenant_id, p_resource_id, p_thread_id,
                                              array[p_entry_id], 'revoked', p_now) as x);
  elsif v_granting then
    delete from {{invalidation}} i
    where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
      and i.thread_id = p_thread_id and i.entry_id = p_entry_id
      and i.reason not in ('deleted', 'expired', 'held');
  end if;
  update {{entries}} e
  set consent_source = coalesce(p_source, e.consent_source, 'user'),
      consent_scope = coalesce(p_scope, e.consent_scope, 'thread'),
      consent_visible = case when v_revoking then false else coalesce(p_visible, e.consent_visible) end,
      consent_granted_at = case when v_granting then coalesce(p_granted_at, p_now)
                                else coalesce(p_granted_at, e.consent_granted_at) end,
      consent_revoked_at = case when v_granting then null
                                when v_revoking then coalesce(p_revoked_at, p_now)
                                else e.consent_revoked_at end,
      updated_at = p_now
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id;
  if v_granting then
    -- Still invalid while one of its own sources is.
    perform tombstone_from_sources_v1(p_tenant_id, p_resource_id, p_thread_id, array[p_entry_id], p_now);
  end if;
  return query
    select e.id, e.text, e.metadata, e.sequence, e.importance, e.consent_source, e.consent_scope,
           e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold,
           e.created_at, e.updated_at, v_invalidated,
           coalesce(e.occurred_at, e.created_at)
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = p_entry_id;
end;
$$;
