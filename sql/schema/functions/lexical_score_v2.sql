-- The lexical leg of recall_v4's score: the share of the query's distinct
-- terms (p_terms, with p_any_term their OR) that the entry holds
-- (held_terms_v1: in its text_tsv, p_text_tsv, or, for a date term of
-- p_date_terms and p_date_keys, in its event date p_event_at), each term
-- counted once; 0 when the query has no terms. Without date terms it is
-- lexical_score_v1, inlined: one expression, inlined into recall.
create or replace function {{schema}}.lexical_score_v2(
  p_text_tsv tsvector, p_event_at timestamptz, p_terms text[], p_any_term tsquery,
  p_date_terms text[], p_date_keys text[])
returns double precision
language sql immutable parallel safe
return case when coalesce(cardinality(p_date_terms), 0) = 0
            then {{schema}}.lexical_score_v1(p_text_tsv, p_terms, p_any_term)
            else {{schema}}.lexical_score_v1(
                   {{schema}}.held_terms_v1(p_text_tsv, p_event_at, p_date_terms, p_date_keys), p_terms, p_any_term)
       end;
