-- lexical_tokens_v2 of a text that holds a CJK character: each of its pieces
-- (split as lexical_terms_v1 splits) is cut into maximal runs of CJK
-- characters (Han, Hiragana, Katakana and Hangul: the ranges below) and of
-- other characters, in order. A CJK run yields its overlapping character
-- bigrams (a one-character run, itself), so a substring query of a sentence
-- holds only bigrams of that sentence and no run is too long to index; any
-- other run yields its lexical_tokens_v2 term (at most one: it holds no CJK
-- character). prism_memory/lexical.py mirrors it.
create or replace function {{schema}}.lexical_cjk_tokens_v2(p_text text) returns text[]
language plpgsql immutable strict parallel safe
set search_path from current
as $$
declare
  v_cjk constant text := '\u1100-\u11ff\u2e80-\u2fdf\u3040-\u30ff\u3130-\u318f\u31c0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uffdc\U0001aff0-\U0001b16f\U00020000-\U0003ffff';
begin
  return array(
    select t.term
    from regexp_split_to_table(lower(p_text collate "C"),
                               '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') with ordinality as p(piece, position)
    cross join lateral regexp_matches(p.piece, '([' || v_cjk || ']+)|([^' || v_cjk || ']+)', 'g')
      with ordinality as r(run, position)
    cross join lateral unnest(case when r.run[1] is null then lexical_tokens_v2(r.run[2])
                                   else array(  -- each character with the next one (a lone character alone)
                                     select c.chr || coalesce(c.next, '')
                                     from (select x.chr, x.position, count(*) over () as chars,
                                                  lead(x.chr) over (order by x.position) as next
                                           from string_to_table(r.run[1], null) with ordinality as x(chr, position)) as c
                                     where c.position < greatest(c.chars, 2)
                                     order by c.position)
                              end) with ordinality as t(term, position)
    order by p.position, r.position, t.position);
end;
$$;
