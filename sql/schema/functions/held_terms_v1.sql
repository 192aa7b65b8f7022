-- The terms an entry holds for a query: those of its text (p_text_tsv) and
-- the query's date terms that name a part of its event date p_event_at
-- (event_date_terms_v1 over p_date_terms and p_date_keys). A term held both
-- ways is one lexeme. Without date terms (an empty or NULL p_date_terms),
-- p_text_tsv as it is. One expression, inlined into the queries that use it.
create or replace function {{schema}}.held_terms_v1(
  p_text_tsv tsvector, p_event_at timestamptz, p_date_terms text[], p_date_keys text[])
returns tsvector
language sql immutable parallel safe
return case when coalesce(cardinality(p_date_terms), 0) = 0 then p_text_tsv
            else p_text_tsv || array_to_tsvector({{schema}}.event_date_terms_v1(p_event_at, p_date_terms, p_date_keys))
       end;
