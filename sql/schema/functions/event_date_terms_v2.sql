-- The date terms of p_dates (query_dates_v1) that name a part of the event
-- date p_event_at (in UTC), as one tsvector: those at the subscript of its
-- month, ISO weekday, day of the month and year; empty when none does. Only
-- held_terms_v2 calls it, after names_event_date_v1. It reads date_terms_v1's
-- fields and calls no function of this schema (nor does names_event_date_v1):
-- Citus counts a function that reads a composite type's fields among the
-- dependencies of that type, so one that also called another such reader
-- would depend on itself. One expression, inlined into the queries that use it.
create or replace function {{schema}}.event_date_terms_v2(p_event_at timestamptz, p_dates {{schema}}.date_terms_v1)
returns tsvector
language sql immutable parallel safe
return coalesce((p_dates).months[date_part('month', p_event_at at time zone 'UTC')::integer], '')
       || coalesce((p_dates).weekdays[date_part('isodow', p_event_at at time zone 'UTC')::integer], '')
       || coalesce((p_dates).days[date_part('day', p_event_at at time zone 'UTC')::integer], '')
       || coalesce((p_dates).years[date_part('year', p_event_at at time zone 'UTC')::integer], '');
