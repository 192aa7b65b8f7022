-- Grants the child thread (child_resource_id, child_thread_id) recall of the
-- entries p_source_ids (at most 256) name in the parent thread, as they are
-- now, until p_expires_at (NULL: no expiry). The child's resource is the
-- parent's own or a delegated agent's ("<resource>/agent:<agent id>"; PM001
-- otherwise). Only ids the thread holds are granted, and a later write under
-- a granted id, or its deletion, takes it out of the grant (unshare_v1): a
-- grant never shares what was written after it. A list that grants nothing
-- (empty, or no id the thread holds) revokes the grant. Expiry is checked
-- whenever the grant is read, never by a sweeper. Returns the number of ids
-- granted.
create or replace function {{schema}}.share_with_v1(
  p_tenant_id text, p_resource_id text, p_parent_thread_id text,
  p_child_resource_id text, p_child_thread_id text, p_source_ids text[],
  p_expires_at timestamptz default null, p_now timestamptz default now())
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_granted text[];
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_parent_thread_id, true);
  perform assert_scope_v2(p_tenant_id, p_child_resource_id, p_child_thread_id, true);
  if p_child_resource_id = p_resource_id and p_child_thread_id = p_parent_thread_id then
    raise exception 'a thread cannot share with itself' using errcode = 'PM002';
  end if;
  if p_child_resource_id <> p_resource_id
     and not (starts_with(p_child_resource_id, p_resource_id || '/agent:')
              and substr(p_child_resource_id, char_length(p_resource_id) + 8) ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$') then
    raise exception 'child_resource_id must be the parent''s resource or a delegated agent''s (<resource>/agent:<agent id>)'
      using errcode = 'PM001';
  end if;
  if coalesce(cardinality(p_source_ids), 0) > 256 then
    raise exception 'a share grant lists at most 256 ids, got %', cardinality(p_source_ids) using errcode = 'PM005';
  end if;
  perform assert_id_v1(source.id, 'shared id', 512, 'PM002')
  from unnest(p_source_ids) as source(id) where not is_id_v1(source.id, 512);
  perform assert_time_v1(p_expires_at, 'expires_at');
  if p_now is null then
    raise exception 'share_with: p_now is required' using errcode = 'PM005';
  end if;
  if p_expires_at is not null and p_expires_at <= p_now then
    raise exception 'expires_at must be in the future' using errcode = 'PM005';
  end if;
  -- The parent thread's lock: no write can slip between choosing the ids and granting them.
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_parent_thread_id);
  v_granted := array(select e.id from {{entries}} e
                     where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
                       and e.thread_id = p_parent_thread_id and e.id = any(p_source_ids)
                     order by e.id collate "C");
  if cardinality(v_granted) = 0 then
    delete from {{share_grant}} g
    where g.tenant_id = p_tenant_id and g.resource_id = p_resource_id and g.parent_thread_id = p_parent_thread_id
      and g.child_resource_id = p_child_resource_id and g.child_thread_id = p_child_thread_id;
    return 0;
  end if;
  insert into {{share_grant}} as g
    (tenant_id, resource_id, parent_thread_id, child_resource_id, child_thread_id, source_ids, expires_at, created_at)
  select p_tenant_id, p_resource_id, p_parent_thread_id, p_child_resource_id, p_child_thread_id,
         v_granted, p_expires_at, p_now
  on conflict (tenant_id, resource_id, parent_thread_id, child_resource_id, child_thread_id) do update
    set source_ids = excluded.source_ids, expires_at = excluded.expires_at, created_at = excluded.created_at;
  return cardinality(v_granted);
end;
$$;
