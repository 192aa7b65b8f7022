-- Raises PM013 unless an ACL read names a principal and groups that are
-- non-blank strings of at most 256 bytes (at most 1,024 groups).
create or replace function {{schema}}.rag_assert_principal_v1(p_principal_id text, p_group_ids text[])
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_principal_id is null or is_blank_v1(p_principal_id) or octet_length(p_principal_id) > 256 then
    raise exception 'an ACL read needs a principal_id: a non-blank string of at most 256 bytes'
      using errcode = 'PM013';
  end if;
  if coalesce(cardinality(p_group_ids), 0) > 1024 then
    raise exception 'an ACL read names at most 1024 groups, got %', cardinality(p_group_ids)
      using errcode = 'PM013';
  end if;
  if exists (select 1 from unnest(p_group_ids) as g(id)
             where g.id is null or is_blank_v1(g.id) or octet_length(g.id) > 256) then
    raise exception 'group ids must be non-blank strings of at most 256 bytes' using errcode = 'PM013';
  end if;
end;
$$;
