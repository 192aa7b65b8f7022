-- Points the scope at p_generation (any generation, so a rebuild can be rolled
-- back); reads without an explicit generation switch at commit. Returns it.
create or replace function {{schema}}.rag_set_generation_v1(p_tenant_id text, p_scope text, p_generation bigint)
returns bigint
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
  if p_generation is null then
    raise exception 'generation is required' using errcode = 'PM002';
  end if;
  perform rag_assert_generation_v1(p_generation);
  insert into {{rag_scope_generations}} as g (tenant_id, scope, generation, updated_at)
  values (p_tenant_id, p_scope, p_generation, now())
  on conflict (tenant_id, scope) do update set generation = excluded.generation, updated_at = excluded.updated_at;
  return p_generation;
end;
$$;
