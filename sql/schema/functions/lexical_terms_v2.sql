-- Lexical terms, rule v2: the tokenizer of text_tsv since revision 0010 (both
-- tables' generated column). The distinct terms lexical_tokens_v2 finds in
-- the first 100,000 characters of p_text, in code-point order. At most two
-- bigrams of at most 4 bytes each per character keep a tsvector below its
-- 1 MB of lexemes. prism_memory/lexical.py mirrors it (lexical_terms_v2).
create or replace function {{schema}}.lexical_terms_v2(p_text text) returns text[]
language sql immutable strict parallel safe
return (
  select coalesce(array_agg(distinct t.term order by t.term), '{}'::text[])
  from unnest({{schema}}.lexical_tokens_v2(left(p_text, 100000))) as t(term)
);
