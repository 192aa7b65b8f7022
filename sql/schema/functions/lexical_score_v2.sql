-- The lexical leg of recall_v4's score: lexical_score_v1 over the terms the
-- entry holds for the query (held_terms_v2: those of its text p_text_tsv,
-- and the date terms of p_dates that name a part of its event date
-- p_event_at), each term counted once. When no date term names its event
-- date (always, for a NULL p_dates), lexical_score_v1 over p_text_tsv,
-- inlined: one expression, inlined into the queries that use it.
create or replace function {{schema}}.lexical_score_v2(
  p_text_tsv tsvector, p_event_at timestamptz, p_terms text[], p_any_term tsquery,
  p_dates {{schema}}.date_terms_v1)
returns double precision
language sql immutable parallel safe
return case when {{schema}}.names_event_date_v1(p_event_at, p_dates)
            then {{schema}}.lexical_score_v1({{schema}}.held_terms_v2(p_text_tsv, p_event_at, p_dates), p_terms,
                                             p_any_term)
            else {{schema}}.lexical_score_v1(p_text_tsv, p_terms, p_any_term)
       end;
