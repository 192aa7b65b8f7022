-- Deletes the scope's chunks that match every criterion given: p_ids (at most
-- 1000), p_source_id, p_generation (NULL: every generation). At least one is
-- required. Returns the number deleted.
create or replace function {{schema}}.rag_delete_v1(
  p_tenant_id text, p_scope text, p_ids text[] default null, p_source_id text default null,
  p_generation bigint default null)
returns integer
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_deleted integer;
begin
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
  perform rag_assert_generation_v1(p_generation);
  if p_ids is null and p_source_id is null and p_generation is null then
    raise exception 'delete needs ids, a source_id or a generation' using errcode = 'PM002';
  end if;
  if coalesce(cardinality(p_ids), 0) > 1000 then
    raise exception 'delete takes at most 1000 ids per call, got %', cardinality(p_ids) using errcode = 'PM005';
  end if;
  delete from {{rag_chunk}} c
  where c.tenant_id = p_tenant_id and c.scope = p_scope
    and (p_ids is null or c.id = any(p_ids))
    and (p_source_id is null or c.source_id = p_source_id)
    and (p_generation is null or c.generation = p_generation);
  get diagnostics v_deleted = row_count;
  return v_deleted;
end;
$$;
