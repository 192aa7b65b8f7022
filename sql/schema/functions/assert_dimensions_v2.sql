-- Raises PM004 when an embedding's width (p_dimensions) differs from the
-- install's pinned dimension or, unpinned, from the width of what its scope
-- already stores: the entries of the thread (p_resource_id, p_thread_id) or,
-- with p_thread_id NULL, the chunks of the RAG scope p_resource_id, in any
-- generation (a RAG scope takes the resource's place, as in assert_scope_v2).
create or replace function {{schema}}.assert_dimensions_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_dimensions integer)
returns void
language plpgsql stable
set search_path from current
as $$
declare
  v_expected integer := {{dimensions}};
begin
  if v_expected is null and p_thread_id is null then
    select vector_dims(c.embedding) into v_expected
    from {{rag_chunk}} c where c.tenant_id = p_tenant_id and c.scope = p_resource_id
    limit 1;
  elsif v_expected is null then
    select vector_dims(e.embedding) into v_expected
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    limit 1;
  end if;
  if v_expected is not null and p_dimensions <> v_expected then
    raise exception 'embedding has % dimensions, expected %', p_dimensions, v_expected
      using errcode = 'PM004';
  end if;
end;
$$;
