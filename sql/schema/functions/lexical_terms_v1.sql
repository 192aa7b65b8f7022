-- Lexical terms, rule v1: the tokenizer of text_tsv and the lexical leg of
-- recall before revision 0010 (lexical_terms_v2 since), and still the hash
-- embedder's features (prism_memory/lexical.py mirrors it exactly).
-- Lower-cases ASCII only (collation "C"), splits on everything but ASCII letters/digits and
-- code points from U+00C0 up (minus the General Punctuation and CJK
-- punctuation blocks), drops stopwords and terms over 64 characters, reads at
-- most the first 200,000 characters (so a tsvector stays far below 1 MB), and
-- returns the distinct terms in code-point order.
create or replace function {{schema}}.lexical_terms_v1(p_text text) returns text[]
language sql immutable strict parallel safe
return (
  select coalesce(array_agg(distinct term order by term), '{}'::text[])
  from regexp_split_to_table(
         lower(left(p_text, 200000) collate "C"),
         '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') as term
  where term <> ''
    and char_length(term) <= 64
    and term <> all ({{stopwords}}::text[])
);
