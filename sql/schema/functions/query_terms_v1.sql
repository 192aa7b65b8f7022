-- The lexical terms a query is scored by: lexical_terms_v1's terms (the same
-- splitting, lower-casing, stopwords and 64-character cap), keeping only the
-- first 32 distinct ones in order of appearance, returned in code-point
-- order. The cap bounds what one query costs: the lexical leg tests each
-- term against each row, so an uncapped 64 KiB query (about 10,900 distinct
-- terms) cost 100x a typical one. prism_memory/lexical.py mirrors it.
create or replace function {{schema}}.query_terms_v1(p_text text) returns text[]
language sql immutable strict parallel safe
return (
  select coalesce(array_agg(kept.term order by kept.term), '{}'::text[])
  from (select t.term
        from regexp_split_to_table(
               lower(left(p_text, 200000) collate "C"),
               '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') with ordinality as t(term, position)
        where t.term <> ''
          and char_length(t.term) <= 64
          and t.term <> all ({{stopwords}}::text[])
        group by t.term
        order by min(t.position)
        limit 32) as kept
);
