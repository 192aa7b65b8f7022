-- Raises PM001 unless tenant and scope are non-blank strings of at most 256 bytes.
create or replace function {{schema}}.rag_assert_scope_v1(p_tenant_id text, p_scope text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_tenant_id is null or is_blank_v1(p_tenant_id) or octet_length(p_tenant_id) > 256 then
    raise exception 'tenant_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if p_scope is null or is_blank_v1(p_scope) or octet_length(p_scope) > 256 then
    raise exception 'scope must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
end;
$$;
