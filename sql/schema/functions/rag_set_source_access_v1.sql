-- Replaces a source's grants, all or nothing: p_principal_ids and p_group_ids
-- (at most 1024 in all; both empty revokes every grant) at p_access_version,
-- which must not be lower than the version already stored (PM014), so an
-- update that arrives late never restores a revoked grant. Returns the number
-- of grants stored.
create or replace function {{schema}}.rag_set_source_access_v1(
  p_tenant_id text, p_source_id text, p_principal_ids text[], p_group_ids text[],
  p_access_version bigint)
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_current bigint;
  v_granted integer;
begin
  perform assert_id_v1(p_tenant_id, 'tenant_id', 256, 'PM001');
  perform assert_id_v1(p_source_id, 'source_id', 512, 'PM002');
  if p_access_version is null or p_access_version < 0 then
    raise exception 'access_version must be an integer >= 0' using errcode = 'PM002';
  end if;
  if coalesce(cardinality(p_principal_ids), 0) + coalesce(cardinality(p_group_ids), 0) > 1024 then
    raise exception 'a source has at most 1024 grants' using errcode = 'PM005';
  end if;
  perform assert_id_v1(g.id, 'a principal or group id', 256, 'PM013')
  from unnest(coalesce(p_principal_ids, '{}') || coalesce(p_group_ids, '{}')) as g(id)
  where not is_id_v1(g.id, 256);

  insert into {{rag_source_version}} (tenant_id, source_id, access_version, updated_at)
  values (p_tenant_id, p_source_id, p_access_version, now())
  on conflict (tenant_id, source_id) do nothing;
  select v.access_version into v_current
  from {{rag_source_version}} v
  where v.tenant_id = p_tenant_id and v.source_id = p_source_id
  for update;
  if p_access_version < v_current then
    raise exception 'source % is at access version %, newer than %', p_source_id, v_current, p_access_version
      using errcode = 'PM014';
  end if;
  update {{rag_source_version}} v set access_version = p_access_version, updated_at = now()
  where v.tenant_id = p_tenant_id and v.source_id = p_source_id;

  delete from {{rag_source_acl}} a where a.tenant_id = p_tenant_id and a.source_id = p_source_id;
  insert into {{rag_source_acl}} (tenant_id, source_id, grantee_kind, grantee_id, access_version)
  select distinct p_tenant_id, p_source_id, g.kind, g.id, p_access_version
  from (select 'principal'::text, id from unnest(p_principal_ids) as id
        union all
        select 'group'::text, id from unnest(p_group_ids) as id) as g(kind, id);
  get diagnostics v_granted = row_count;
  return v_granted;
end;
$$;
