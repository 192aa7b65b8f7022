-- Whether the principal (or one of its groups) holds a grant on the source,
-- at p_access_version or newer when given: the rule query, lexical_query and
-- get_by_source apply to every chunk (with the chunk's access_version).
create or replace function {{schema}}.rag_check_source_access_v1(
  p_tenant_id text, p_source_id text, p_principal_id text, p_group_ids text[] default '{}',
  p_access_version bigint default null)
returns boolean
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_id_v1(p_tenant_id, 'tenant_id', 256, 'PM001');
  perform assert_id_v1(p_source_id, 'source_id', 512, 'PM002');
  perform rag_assert_principal_v1(p_principal_id, p_group_ids);
  return exists (
    select 1 from {{rag_source_acl}} a
    where a.tenant_id = p_tenant_id and a.source_id = p_source_id
      and ((a.grantee_kind = 'principal' and a.grantee_id = p_principal_id)
           or (a.grantee_kind = 'group' and a.grantee_id = any(p_group_ids)))
      and a.access_version >= coalesce(p_access_version, 0));
end;
$$;
