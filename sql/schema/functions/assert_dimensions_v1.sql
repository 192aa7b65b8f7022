-- Raises PM004 when an embedding's width differs from the install's pinned
-- dimension, or (unpinned) from the entries already stored in the thread.
create or replace function {{schema}}.assert_dimensions_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_dimensions integer)
returns void
language plpgsql stable
set search_path from current
as $$
declare
  v_expected integer := {{dimensions}};
begin
  if v_expected is null then
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
