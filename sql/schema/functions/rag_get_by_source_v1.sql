-- The chunks of one source in one generation (the current one by default),
-- by id (code-point order) after p_after_id, at most p_limit (1..1000),
-- under the ACL of rag_where_v1 when p_acl.
create or replace function {{schema}}.rag_get_by_source_v1(
  p_tenant_id text, p_scope text, p_source_id text, p_after_id text default null,
  p_limit integer default 1000, p_acl boolean default false, p_principal_id text default null,
  p_group_ids text[] default '{}', p_generation bigint default null)
returns table (id text, source_id text, text text, metadata jsonb, generation bigint,
               access_version bigint, embedding vector, created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_generation bigint := rag_read_generation_v1(p_tenant_id, p_scope, 1, null, p_acl,
                                                p_principal_id, p_group_ids, p_generation);
begin
  perform assert_id_v1(p_source_id, 'source_id', 512, 'PM002');
  if p_limit is null or p_limit < 1 or p_limit > 1000 then
    raise exception 'limit must be between 1 and 1000, got %', p_limit using errcode = 'PM005';
  end if;
  return query execute
    'select c.id, c.source_id, c.text, c.metadata, c.generation, c.access_version, c.embedding::vector,'
    || ' c.created_at, c.updated_at from {{rag_chunk}} c where ' || rag_where_v1(false, p_acl)
    || ' and c.source_id = $7 and ($8::text is null or c.id collate "C" > $8::text collate "C")'
    || ' order by c.id collate "C" limit $9'
    using p_tenant_id, p_scope, v_generation, null::jsonb, p_principal_id, p_group_ids,
          p_source_id, p_after_id, p_limit;
end;
$$;
