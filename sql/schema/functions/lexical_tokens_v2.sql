-- Lexical terms, rule v2 (revision 0010): every term of p_text in order of
-- appearance, repeats kept; lexical_terms_v2 and query_terms_v2 cut the text
-- to 100,000 characters first. prism_memory/lexical.py mirrors it exactly.
-- Lower-cases ASCII only (collation "C") and splits the text into pieces as
-- lexical_terms_v1 does. A piece is one term: over 64 characters its first 64
-- (never dropped, not stemmed); else nothing for a stopword; else, for ASCII
-- letters only, its Porter stem (porter_stem_v1, sql/schema/text_search.sql;
-- an empty stem is the word itself); else the piece as it is (digits,
-- accents, other scripts). A text holding a CJK character (Han, Hiragana,
-- Katakana, Hangul: the ranges below, as in lexical_cjk_tokens_v2) is
-- tokenized by lexical_cjk_tokens_v2, which cuts its pieces into CJK runs
-- (character bigrams) and other runs (terms as above).
create or replace function {{schema}}.lexical_tokens_v2(p_text text) returns text[]
language sql immutable strict parallel safe
return case
  when p_text ~ '[\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3130-\u318f\u31c0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc\U0001aff0-\U0001b16f\U00020000-\U0003ffff]'
    then {{schema}}.lexical_cjk_tokens_v2(p_text)
  else (
    select coalesce(array_agg(case when char_length(p.piece) > 64 then left(p.piece, 64)
                                   when p.piece ~ '^[a-z]+$' then (ts_lexize('{{schema}}.porter_stem_v1', p.piece))[1]
                                   else p.piece
                              end order by p.position), '{}'::text[])
    from regexp_split_to_table(lower(p_text collate "C"),
                               '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') with ordinality as p(piece, position)
    where p.piece <> ''
      and (char_length(p.piece) > 64 or p.piece <> all ({{stopwords}}::text[])))
end;
