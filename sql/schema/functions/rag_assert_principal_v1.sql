-- Raises PM013 unless an ACL read names a principal and groups that are
-- non-blank strings of at most 256 bytes (at most 1,024 groups).
create or replace function {{schema}}.rag_assert_principal_v1(p_principal_id text, p_group_ids text[])
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  perform assert_id_v1(p_principal_id, 'principal_id', 256, 'PM013');
  if coalesce(cardinality(p_group_ids), 0) > 1024 then
    raise exception 'an ACL read names at most 1024 groups, got %', cardinality(p_group_ids)
      using errcode = 'PM013';
  end if;
  perform assert_id_v1(g.id, 'group id', 256, 'PM013') from unnest(p_group_ids) as g(id) where not is_id_v1(g.id, 256);
end;
$$;
