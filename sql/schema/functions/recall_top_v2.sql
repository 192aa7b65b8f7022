-- The best p_keep of recall_v4's probed rows (p_probes: rows of p_resource_id
-- read with their distance, the cheap columns of the gate already applied):
-- those not expired at p_now (is_live_v2 under p_resource_cutoff and their
-- thread's own policy, if any) and not tombstoned, scored exactly
-- (similarity + p_lexical_weight * lexical, lexical_score_v1 over p_terms), ordered by
-- score desc, sequence, id, thread (code-point order for the texts).
create or replace function {{schema}}.recall_top_v2(
  p_probes {{schema}}.recall_probe_v1[], p_tenant_id text, p_resource_id text, p_terms text[], p_any_term tsquery,
  p_resource_cutoff timestamptz, p_now timestamptz, p_keep integer, p_lexical_weight double precision)
returns {{schema}}.recall_candidate_v1[]
language plpgsql stable  -- so its plan is cached for the session (a SQL function's is made in every transaction)
set search_path from current
set enable_indexscan = on  -- recall_v4 turns plain index scans off
as $$
begin
  return (
    select coalesce(array_agg(row(t.row_id, p_resource_id, t.thread_id, t.id, t.sequence, t.importance, t.created_at,
                                  t.similarity, t.lexical)::{{schema}}.recall_candidate_v1
                              order by t.base desc, t.sequence, t.id collate "C", t.thread_id collate "C"), '{}')
    from (select p.row_id, p.thread_id, p.id, p.sequence, p.importance, p.created_at, p.similarity, l.lexical,
                 p.similarity + p_lexical_weight * l.lexical as base
          from unnest(p_probes) as p
          left join (select tp.thread_id, p_now - tp.max_age_days * interval '24 hours' as cutoff
                     from {{retention_policy}} tp
                     where tp.tenant_id = p_tenant_id and tp.resource_id = p_resource_id and tp.thread_id <> '') as tp
            on tp.thread_id = p.thread_id
          cross join lateral (select lexical_score_v1(p.text_tsv, p_terms, p_any_term) as lexical) as l
          where is_live_v2(p.created_at, p.expires_at, p.sources_created_at, p.sources_expire_at,
                           greatest(p_resource_cutoff, tp.cutoff), p_now)
            -- One probe of the tombstones' key per row (a subplan: as an anti-join,
            -- planned for a few rows, it read the resource's tombstones per row).
            and (select true from {{invalidation}} i
                 where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                   and i.thread_id = p.thread_id and i.entry_id = p.id) is null
          order by base desc, p.sequence, p.id collate "C", p.thread_id collate "C"
          limit p_keep) as t);
end;
$$;
