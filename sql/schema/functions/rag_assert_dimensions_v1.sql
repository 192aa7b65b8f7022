-- Raises PM004 when p_dimensions differs from the pinned dimension or
-- (unpinned) from the chunks already stored in the scope, any generation.
create or replace function {{schema}}.rag_assert_dimensions_v1(p_tenant_id text, p_scope text, p_dimensions integer)
returns void
language plpgsql stable
set search_path from current
as $$
declare
  v_expected integer := {{dimensions}};
begin
  if v_expected is null then
    select vector_dims(c.embedding) into v_expected
    from {{rag_chunk}} c where c.tenant_id = p_tenant_id and c.scope = p_scope
    limit 1;
  end if;
  if v_expected is not null and p_dimensions <> v_expected then
    raise exception 'embedding has % dimensions, expected %', p_dimensions, v_expected
      using errcode = 'PM004';
  end if;
end;
$$;
