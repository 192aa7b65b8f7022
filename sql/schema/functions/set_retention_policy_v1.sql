-- API function (prism_memory/operations.py; security definer, see recall_v3).
--
-- Stores the retention policy of a resource (p_thread_id NULL) or of one of
-- its threads: entries older than p_max_age_days (24-hour days, 0..36,500;
-- PM005 otherwise) stop being recalled, exported and injected at once
-- (retention_cutoff_v1), and the sweep deletes them. A thread's entries obey
-- both its thread's policy and its resource's (the stricter wins). NULL
-- removes the policy. Returns the maximum age now stored (NULL: none).
create or replace function {{schema}}.set_retention_policy_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text default null,
  p_max_age_days double precision default null, p_now timestamptz default now())
returns double precision
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_now_v1(p_now);  -- stored as the write's time
  perform assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, false);
  if p_max_age_days not between 0 and 36500 then
    raise exception 'max_age_days must be a number from 0 to 36500, got %', p_max_age_days using errcode = 'PM005';
  end if;
  if p_max_age_days is null then
    delete from {{retention_policy}} p
    where p.tenant_id = p_tenant_id and p.resource_id = p_resource_id and p.thread_id = coalesce(p_thread_id, '');
    return null;
  end if;
  insert into {{retention_policy}} as p (tenant_id, resource_id, thread_id, max_age_days, created_at, updated_at)
  values (p_tenant_id, p_resource_id, coalesce(p_thread_id, ''), p_max_age_days, p_now, p_now)
  on conflict (tenant_id, resource_id, thread_id) do update
    set max_age_days = excluded.max_age_days, updated_at = excluded.updated_at;
  return p_max_age_days;
end;
$$;
