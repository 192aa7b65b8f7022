-- The lexical leg of the score: the share of the query's distinct terms
-- (p_terms, with p_any_term their OR) that the entry's text_tsv holds; 0 when
-- the query has no terms. Inlined into recall.
create or replace function {{schema}}.lexical_score_v1(p_text_tsv tsvector, p_terms text[], p_any_term tsquery)
returns double precision
language sql immutable parallel safe
return case when coalesce(cardinality(p_terms), 0) = 0 or not (p_text_tsv @@ p_any_term) then 0::float8
            else (length(p_text_tsv) - length(ts_delete(p_text_tsv, p_terms)))::float8 / cardinality(p_terms)
       end;
