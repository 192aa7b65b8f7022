-- API function: the working-memory document of a resource (p_thread_id NULL)
-- or of one of its threads, with its version and times; no row when there is
-- none. PM001 for a bad scope.
create or replace function {{schema}}.get_working_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text default null)
returns table (data jsonb, version bigint, created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform {{schema}}.assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, false);
  return query
    select w.data, w.version, w.created_at, w.updated_at
    from {{working}} w
    where w.tenant_id = p_tenant_id and w.resource_id = p_resource_id
      and w.thread_id = coalesce(p_thread_id, '');
end;
$$;
