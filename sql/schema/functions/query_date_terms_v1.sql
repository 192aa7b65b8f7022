-- What each of a query's terms (p_terms, as query_terms_v2 gives them) that
-- names a part of a date denotes, one row per such term in the order of
-- p_terms (none for NULL):
--   part 'month',   value 1-12: an English month name or jan ... dec, sept,
--                   as tokenizer v2 stems them (january gives januari, may
--                   gives mai: the modal verb "may" names May too);
--   part 'weekday', value 1-7 (ISO, Monday 1): a weekday's name, or mon, tue,
--                   tues, thu, thur, thurs (not wed, fri, sat or sun: the
--                   stems of wedding, fried, sat and sun);
--   part 'year',    value 1000-9999: four digits;
--   part 'day',     value 1-31 (of the month): one or two digits (7, 07) or
--                   an ordinal (7th, 21st).
-- recall_v4 matches them against an entry's event date (event_date_parts_v1,
-- held_terms_v1). prism_memory/lexical_dates.py mirrors it (query_date_terms).
create or replace function {{schema}}.query_date_terms_v1(p_terms text[])
returns table (term text, part text, value integer)
language sql immutable parallel safe
set search_path from current
as $$
  select t.term,
         coalesce(n.part, case when t.term ~ '^[1-9][0-9]{3}$' then 'year' else 'day' end),
         coalesce(n.value, substring(t.term from '^[0-9]+')::integer)
  from unnest(p_terms) with ordinality as t(term, position)
  left join (values ('januari', 'month', 1), ('jan', 'month', 1), ('februari', 'month', 2), ('feb', 'month', 2),
                    ('march', 'month', 3), ('mar', 'month', 3), ('april', 'month', 4), ('apr', 'month', 4),
                    ('mai', 'month', 5), ('june', 'month', 6), ('jun', 'month', 6), ('juli', 'month', 7),
                    ('jul', 'month', 7), ('august', 'month', 8), ('aug', 'month', 8), ('septemb', 'month', 9),
                    ('sep', 'month', 9), ('sept', 'month', 9), ('octob', 'month', 10), ('oct', 'month', 10),
                    ('novemb', 'month', 11), ('nov', 'month', 11), ('decemb', 'month', 12), ('dec', 'month', 12),
                    ('mondai', 'weekday', 1), ('mon', 'weekday', 1), ('tuesdai', 'weekday', 2),
                    ('tue', 'weekday', 2), ('wednesdai', 'weekday', 3), ('thursdai', 'weekday', 4),
                    ('thu', 'weekday', 4), ('thur', 'weekday', 4), ('fridai', 'weekday', 5),
                    ('saturdai', 'weekday', 6), ('sundai', 'weekday', 7)) as n(term, part, value)
    on n.term = t.term
  where n.term is not null
     or t.term ~ '^[1-9][0-9]{3}$'
     or t.term ~ '^(0?[1-9]|[12][0-9]|3[01])(st|nd|rd|th)?$'
  order by t.position
$$;
