-- What each of a query's terms (p_terms, as query_terms_v2 gives them) that
-- names a part of a date denotes, one row per such term in the order of
-- p_terms (none for NULL):
--   part 'month',   value 1-12, and
--   part 'weekday', value 1-7 (ISO, Monday 1): a date word (date_words_v1);
--   part 'year',    value 1000-9999: four digits;
--   part 'day',     value 1-31 (of the month): one or two digits (7, 07) or
--                   an ordinal (7th, 21st).
-- query_dates_v1 gathers them for recall_v4. prism_memory/lexical_dates.py
-- mirrors it (query_date_terms). A body parsed when it is created, so that it
-- is inlined into the query that calls it.
create or replace function {{schema}}.query_date_terms_v1(p_terms text[])
returns table (term text, part text, value integer)
language sql immutable parallel safe
begin atomic
  select t.term, split_part(t.denotes, ':', 1), split_part(t.denotes, ':', 2)::integer
  from (select u.term, u.position,
               -- A word is looked up (date_words_v1: a binary search); only a term
               -- that starts with a digit is matched against the patterns.
               coalesce({{schema}}.date_words_v1() ->> u.term,
                        case when ascii(u.term) between 48 and 57 then  -- 0-9
                          case when u.term ~ '^[1-9][0-9]{3}$' then 'year:' || u.term
                               when u.term ~ '^(0?[1-9]|[12][0-9]|3[01])(st|nd|rd|th)?$'
                               then 'day:' || substring(u.term from '^[0-9]+')::integer
                          end
                        end) as denotes
        from unnest(p_terms) with ordinality as u(term, position)) as t
  where t.denotes is not null
  order by t.position;
end;
