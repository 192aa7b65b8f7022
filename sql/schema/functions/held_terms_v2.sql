-- The terms an entry holds for a query: those of its text (p_text_tsv) and
-- the query's date terms (p_dates, from query_dates_v1) that name a part of
-- its event date p_event_at (names_event_date_v1, event_date_terms_v2). A
-- term held both ways is one lexeme. p_text_tsv as it is when no date term
-- names its event date. lexical_score_v2 scores it. One expression, inlined
-- into the queries that use it.
create or replace function {{schema}}.held_terms_v2(
  p_text_tsv tsvector, p_event_at timestamptz, p_dates {{schema}}.date_terms_v1)
returns tsvector
language sql immutable parallel safe
return case when {{schema}}.names_event_date_v1(p_event_at, p_dates)
            then p_text_tsv || {{schema}}.event_date_terms_v2(p_event_at, p_dates)
            else p_text_tsv
       end;
