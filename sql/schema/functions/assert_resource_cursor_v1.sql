-- Raises PM005 unless a resource-wide cursor (after thread_id, sequence, id)
-- is all NULL (the start) or has all three values, the thread and the id
-- non-blank (list_resource_entries_v1, invalidate_resource_v1).
create or replace function {{schema}}.assert_resource_cursor_v1(
  p_after_thread_id text, p_after_sequence bigint, p_after_id text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if num_nonnulls(p_after_thread_id, p_after_sequence, p_after_id) not in (0, 3)
     or is_blank_v1(p_after_thread_id) or is_blank_v1(p_after_id) then
    raise exception 'a resource cursor is (thread_id, sequence, id), all given or none' using errcode = 'PM005';
  end if;
end;
$$;
