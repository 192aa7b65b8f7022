-- The parts of an entry's event date (p_event_at: its occurred_at, else its
-- created_at) a query's date terms can name, the date taken in UTC, as keys
-- 'part:value' of query_date_terms_v1's parts: its month, ISO weekday, year
-- and day of the month ('{month:5,weekday:7,year:2023,day:7}' for any time of
-- 2023-05-07 UTC). Its elements are NULL for NULL.
create or replace function {{schema}}.event_date_parts_v1(p_event_at timestamptz)
returns text[]
language sql immutable parallel safe
return array['month:' || extract(month from p_event_at at time zone 'UTC')::integer,
             'weekday:' || extract(isodow from p_event_at at time zone 'UTC')::integer,
             'year:' || extract(year from p_event_at at time zone 'UTC')::integer,
             'day:' || extract(day from p_event_at at time zone 'UTC')::integer];
