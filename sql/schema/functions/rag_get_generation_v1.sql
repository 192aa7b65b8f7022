-- The scope's current generation: the pointer, or 0 when never set.
create or replace function {{schema}}.rag_get_generation_v1(p_tenant_id text, p_scope text)
returns bigint
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
begin
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
  return coalesce((select g.generation from {{rag_scope_generations}} g
                   where g.tenant_id = p_tenant_id and g.scope = p_scope), 0);
end;
$$;
