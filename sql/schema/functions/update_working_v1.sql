-- Replaces the working-memory document and increments its version (1 for a
-- new record). With p_expected_version set, the current version (0 when there
-- is no record) must equal it, else PM009 and nothing changes.
create or replace function {{schema}}.update_working_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_data jsonb,
  p_expected_version bigint default null)
returns table (data jsonb, version bigint, created_at timestamptz, updated_at timestamptz)
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_current bigint;
begin
  perform {{schema}}.assert_scope_v2(p_tenant_id, p_resource_id, p_thread_id, false);
  if p_data is null or jsonb_typeof(p_data) <> 'object' then
    raise exception 'working memory must be a JSON object' using errcode = 'PM007';
  end if;
  if pg_column_size(p_data) > 8388608 then
    raise exception 'working memory is % bytes, over the 8 MiB hard cap of the SQL function',
      pg_column_size(p_data) using errcode = 'PM006';
  end if;
  if p_expected_version < 0 then
    raise exception 'expected_version must be >= 0, got %', p_expected_version using errcode = 'PM005';
  end if;
  -- Update the record in place if there is one; else insert it. Citus routes
  -- neither statement with a parameter or now() in ON CONFLICT DO UPDATE, so
  -- the upsert is spelled out; a record created concurrently between the two
  -- is taken up by the next pass (or, with an expected version, is PM009).
  loop
    select w.version into v_current
    from {{working}} w
    where w.tenant_id = p_tenant_id and w.resource_id = p_resource_id
      and w.thread_id = coalesce(p_thread_id, '')
    for update;
    v_current := coalesce(v_current, 0);
    if p_expected_version is not null and p_expected_version <> v_current then
      raise exception 'working memory is at version %, expected %', v_current, p_expected_version
        using errcode = 'PM009';
    end if;
    if v_current > 0 then
      return query
        update {{working}} w set data = p_data, version = w.version + 1, updated_at = now()
        where w.tenant_id = p_tenant_id and w.resource_id = p_resource_id
          and w.thread_id = coalesce(p_thread_id, '')
        returning w.data, w.version, w.created_at, w.updated_at;
      return;
    end if;
    return query
      insert into {{working}} as w (tenant_id, resource_id, thread_id, data, version)
      values (p_tenant_id, p_resource_id, coalesce(p_thread_id, ''), p_data, 1)
      on conflict (tenant_id, resource_id, thread_id) do nothing
      returning w.data, w.version, w.created_at, w.updated_at;
    if found then
      return;
    end if;
    if p_expected_version is not null then
      -- With an expected version: a concurrent writer created the record first.
      raise exception 'working memory changed concurrently (expected version %)', v_current
        using errcode = 'PM009';
    end if;
  end loop;
end;
$$;
