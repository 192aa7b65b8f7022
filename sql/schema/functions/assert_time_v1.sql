-- Raises PM002 unless p_time is NULL or within years 1 to 9999 (UTC), the
-- range every client (and Python's datetime) can read back.
create or replace function {{schema}}.assert_time_v1(p_time timestamptz, p_label text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_time is not null
     and not (p_time between '0001-01-02 00:00:00+00'::timestamptz and '9999-12-30 00:00:00+00'::timestamptz) then
    raise exception '% must be between years 1 and 9999, got %', p_label, p_time using errcode = 'PM002';
  end if;
end;
$$;
