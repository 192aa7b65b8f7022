-- The lexical terms a query is scored by since revision 0010 (recall_v3,
-- rag_lexical_query_v1): the terms lexical_tokens_v2 finds in the first
-- 100,000 characters of p_text, keeping only the first 32 distinct ones in
-- order of appearance, returned in code-point order. The cap bounds what one
-- query costs. The text is read in growing prefixes, each without its last
-- piece (maybe a term cut in two), until 32 distinct terms are found, so a
-- long query costs little more than a short one to tokenize.
-- prism_memory/lexical.py mirrors it (query_terms_v2).
create or replace function {{schema}}.query_terms_v2(p_text text) returns text[]
language plpgsql immutable strict parallel safe
set search_path from current
as $$
declare
  v_length integer := least(char_length(p_text), 100000);
  v_window integer := 2048;
  v_prefix text;
  v_terms text[];
begin
  loop
    v_window := least(v_window, v_length);
    v_prefix := lower(left(p_text, v_window) collate "C");
    if v_window < v_length then
      -- the prefix's last piece may be a term cut in two: it waits for a longer prefix
      v_prefix := regexp_replace(v_prefix, '[a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+$', '');
    end if;
    v_terms := array(
      select kept.term from (
        select t.term
        from unnest(lexical_tokens_v2(v_prefix)) with ordinality as t(term, position)
        group by t.term
        order by min(t.position)
        limit 32) as kept
      order by kept.term collate "C");
    exit when cardinality(v_terms) >= 32 or v_window >= v_length;
    v_window := v_window * 8;
  end loop;
  return v_terms;
end;
$$;
