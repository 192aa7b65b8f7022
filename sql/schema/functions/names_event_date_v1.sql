-- Whether a date term of p_dates (query_dates_v1) names a part of the event
-- date p_event_at (an entry's occurred_at, else its created_at), the date
-- taken in UTC: its month, ISO weekday, day of the month or year. False for a
-- NULL p_dates (a query without date terms), at the cost of one test; a
-- part's array that is NULL is never subscripted, so a part no term names
-- costs next to nothing. It calls no function of this schema (Citus: see
-- event_date_terms_v2). One expression, inlined into the queries that use it.
create or replace function {{schema}}.names_event_date_v1(p_event_at timestamptz, p_dates {{schema}}.date_terms_v1)
returns boolean
language sql immutable parallel safe
return not (p_dates is null)
       and ((p_dates).months[date_part('month', p_event_at at time zone 'UTC')::integer] is not null
            or (p_dates).weekdays[date_part('isodow', p_event_at at time zone 'UTC')::integer] is not null
            or (p_dates).days[date_part('day', p_event_at at time zone 'UTC')::integer] is not null
            or (p_dates).years[date_part('year', p_event_at at time zone 'UTC')::integer] is not null);
