-- Raises PM001 unless tenant, resource (and thread, when required) are
-- non-blank strings of at most 256 bytes.
create or replace function {{schema}}.assert_scope_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_thread_required boolean)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_tenant_id is null or is_blank_v1(p_tenant_id) or octet_length(p_tenant_id) > 256 then
    raise exception 'tenant_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if p_resource_id is null or is_blank_v1(p_resource_id) or octet_length(p_resource_id) > 256 then
    raise exception 'resource_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if (p_thread_required or p_thread_id is not null)
     and (p_thread_id is null or is_blank_v1(p_thread_id) or octet_length(p_thread_id) > 256) then
    raise exception 'thread_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
end;
$$;
