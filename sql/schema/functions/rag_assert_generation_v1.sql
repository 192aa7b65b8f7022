-- Raises PM002 unless p_generation is NULL or within 0 .. 2^53 - 1.
create or replace function {{schema}}.rag_assert_generation_v1(p_generation bigint)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_generation is not null and p_generation not between 0 and 9007199254740991 then
    raise exception 'generation must be between 0 and 2^53 - 1, got %', p_generation using errcode = 'PM002';
  end if;
end;
$$;
