-- Grants the child thread (child_resource_id, child_thread_id; by default of
-- the parent's resource) recall of p_source_ids (at most 256) from the parent
-- thread, until p_expires_at (NULL: no expiry). An empty list revokes the
-- grant. Expiry is checked whenever the grant is read, never by a sweeper.
-- Returns the number of ids granted (0 when revoked).
create or replace function {{schema}}.share_with_v1(
  p_tenant_id text, p_resource_id text, p_parent_thread_id text,
  p_child_resource_id text, p_child_thread_id text, p_source_ids text[],
  p_expires_at timestamptz default null, p_now timestamptz default now())
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_parent_thread_id, true);
  perform assert_scope_v1(p_tenant_id, p_child_resource_id, p_child_thread_id, true);
  if p_child_resource_id = p_resource_id and p_child_thread_id = p_parent_thread_id then
    raise exception 'a thread cannot share with itself' using errcode = 'PM002';
  end if;
  if coalesce(cardinality(p_source_ids), 0) > 256 then
    raise exception 'a share grant lists at most 256 ids, got %', cardinality(p_source_ids) using errcode = 'PM005';
  end if;
  if exists (select 1 from unnest(p_source_ids) as source(id)
             where source.id is null or is_blank_v1(source.id) or octet_length(source.id) > 512) then
    raise exception 'shared ids must be non-blank strings of at most 512 bytes' using errcode = 'PM002';
  end if;
  perform assert_time_v1(p_expires_at, 'expires_at');
  if p_now is null then
    raise exception 'share_with: p_now is required' using errcode = 'PM005';
  end if;
  if p_expires_at is not null and p_expires_at <= p_now then
    raise exception 'expires_at must be in the future' using errcode = 'PM005';
  end if;
  if coalesce(cardinality(p_source_ids), 0) = 0 then
    delete from {{share_grant}} g
    where g.tenant_id = p_tenant_id and g.resource_id = p_resource_id and g.parent_thread_id = p_parent_thread_id
      and g.child_resource_id = p_child_resource_id and g.child_thread_id = p_child_thread_id;
    return 0;
  end if;
  insert into {{share_grant}} as g
    (tenant_id, resource_id, parent_thread_id, child_resource_id, child_thread_id, source_ids, expires_at, created_at)
  values (p_tenant_id, p_resource_id, p_parent_thread_id, p_child_resource_id, p_child_thread_id,
          array(select distinct source.id collate "C" from unnest(p_source_ids) as source(id) order by 1), p_expires_at, p_now)
  on conflict (tenant_id, resource_id, parent_thread_id, child_resource_id, child_thread_id) do update
    set source_ids = excluded.source_ids, expires_at = excluded.expires_at, created_at = excluded.created_at;
  return (select count(distinct source.id) from unnest(p_source_ids) as source(id))::integer;
end;
$$;
