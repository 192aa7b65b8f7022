-- Raises PM002 unless p_now, the time a read is made at (what expiry and the
-- retention policies are measured against), is a time within years 1 to 9999
-- (UTC): a NULL or infinite "now" would bring back every expired entry.
create or replace function {{schema}}.assert_now_v1(p_now timestamptz)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_now is null then
    raise exception 'now must be a time, got NULL' using errcode = 'PM002';
  end if;
  perform assert_time_v1(p_now, 'now');
end;
$$;
