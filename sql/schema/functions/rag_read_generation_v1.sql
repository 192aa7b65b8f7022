-- Checks shared by the RAG reads; returns the generation to read (the
-- scope's current one when p_generation is NULL).
create or replace function {{schema}}.rag_read_generation_v1(
  p_tenant_id text, p_scope text, p_top_k integer, p_filter jsonb, p_acl boolean,
  p_principal_id text, p_group_ids text[], p_generation bigint)
returns bigint
language plpgsql stable
set search_path from current
as $$
begin
  perform assert_scope_v2(p_tenant_id, p_scope, null, false, 'scope');
  perform rag_assert_generation_v1(p_generation);
  if p_top_k is null or p_top_k < 1 or p_top_k > 32 then
    raise exception 'top_k must be between 1 and 32, got %', p_top_k using errcode = 'PM005';
  end if;
  if p_filter is not null and jsonb_typeof(p_filter) <> 'object' then
    raise exception 'filter must be a JSON object' using errcode = 'PM008';
  end if;
  if octet_length(p_filter::text) > 65536 then
    raise exception 'filter is over the 64 KiB hard cap' using errcode = 'PM006';
  end if;
  if p_acl is null then
    raise exception 'acl must be true or false' using errcode = 'PM013';
  end if;
  if p_acl then
    perform rag_assert_principal_v1(p_principal_id, p_group_ids);
  end if;
  return coalesce(p_generation, rag_get_generation_v1(p_tenant_id, p_scope));
end;
$$;
