-- The lexical terms a query is scored by: lexical_terms_v1's terms (the same
-- splitting, lower-casing, stopwords and 64-character cap), keeping only the
-- first 32 distinct ones in order of appearance, returned in code-point
-- order. The cap bounds what one query costs: the lexical leg tests each
-- term against each row, so an uncapped 64 KiB query (about 10,900 distinct
-- terms) cost 100x a typical one. The text is read in growing prefixes (the
-- last, maybe cut, piece of a prefix left out) until 32 distinct terms are
-- found, so a long query costs little more than a short one to tokenize.
-- prism_memory/lexical.py mirrors it. Since revision 0010, recall and RAG
-- lexical queries are scored by query_terms_v2.
create or replace function {{schema}}.query_terms_v1(p_text text) returns text[]
language plpgsql immutable strict parallel safe
set search_path from current
as $$
declare
  v_length integer := least(char_length(p_text), 200000);
  v_window integer := 2048;
  v_terms text[];
begin
  loop
    v_window := least(v_window, v_length);
    v_terms := array(
      select kept.term from (
        select p.term
        from (select t.term, t.position, count(*) over () as pieces
              from regexp_split_to_table(
                     lower(left(p_text, v_window) collate "C"),
                     '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') with ordinality as t(term, position)) as p
        where p.term <> ''
          and char_length(p.term) <= 64
          and p.term <> all ({{stopwords}}::text[])
          -- a prefix's last piece may be a term cut in two: it waits for a longer prefix
          and (v_window = v_length or p.position < p.pieces)
        group by p.term
        order by min(p.position)
        limit 32) as kept
      order by kept.term);
    exit when cardinality(v_terms) >= 32 or v_window >= v_length;
    v_window := v_window * 8;
  end loop;
  return v_terms;
end;
$$;
