-- Raises SQLSTATE p_errcode unless p_value passes the id rule (is_id_v1) for
-- p_max_bytes, naming it by p_label as prism_memory.checks.check_id does:
-- "<label> must be a non-blank string of at most <N> bytes".
create or replace function {{schema}}.assert_id_v1(p_value text, p_label text, p_max_bytes integer, p_errcode text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if not is_id_v1(p_value, p_max_bytes) then
    raise exception '% must be a non-blank string of at most % bytes', p_label, p_max_bytes using errcode = p_errcode;
  end if;
end;
$$;
