-- The date terms of a query (p_date_terms, each denoting the part p_date_keys
-- names at the same position: query_date_terms_v1's part and value as
-- event_date_parts_v1 writes them, 'month:5') that name a part of the event
-- date p_event_at, in no order; empty for a NULL p_event_at.
create or replace function {{schema}}.event_date_terms_v1(
  p_event_at timestamptz, p_date_terms text[], p_date_keys text[])
returns text[]
language sql immutable parallel safe
return array(select d.term
             from unnest({{schema}}.event_date_parts_v1(p_event_at)) as k(key)
             join unnest(p_date_terms, p_date_keys) as d(term, key) on d.key = k.key);
