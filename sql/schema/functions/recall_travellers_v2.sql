-- recall_v4's best p_keep candidates (recall_top_v2: scored exactly, in score
-- order) among the travellers of p_resource_id's other threads than
-- p_thread_id: the entries that may leave them (leaves_thread_v1, which have
-- an index of their own), outside the threads of p_foreign, read by
-- recall_travellers_probe_v2, kept by p_selection, their lexical leg with
-- the query's date terms (p_dates). Up to 5,000 travellers are ranked exactly, as
-- the thread's own are. Over that, on an install with the travellers' HNSW
-- index (a pinned width of at most 2,000), the nearest are read through it,
-- 256, then 786 if need be, until the p_keep-th best exact score (theirs, or
-- p_bar: the thread's own p_keep-th best, which a traveller must beat to
-- matter) beats every similarity left out plus p_lexical_weight: exact when that holds
-- (and HNSW orders exactly), approximate otherwise. If fewer than p_keep of
-- them pass every gate (HNSW ran dry, or tombstones and thread policies,
-- applied after it, removed them), every traveller is ranked exactly after
-- all, so a recall always returns min(top_k, matches).
create or replace function {{schema}}.recall_travellers_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_terms text[],
  p_any_term tsquery, p_require_consent boolean, p_foreign text[], p_now timestamptz, p_keep integer,
  p_bar double precision, p_selection {{schema}}.selection_v1, p_lexical_weight double precision,
  p_dates {{schema}}.date_terms_v1)
returns {{schema}}.recall_candidate_v1[]
language plpgsql stable
set search_path from current
as $$
declare
  v_resource_cutoff constant timestamptz := retention_cutoff_v1(p_tenant_id, p_resource_id, null, p_now);
  v_exact boolean := true;  -- the travellers are ranked exactly (else read through HNSW)
  v_probe integer := greatest(256, 8 * p_keep);  -- rows read, whose lexical leg is then scored
  v_probes {{schema}}.recall_probe_v1[];
  v_probed bigint;
  v_floor double precision;  -- the highest score a row left out could have
  v_found {{schema}}.recall_candidate_v1[];
begin
  if {{dimensions}}::integer <= 2000 then
    -- Counted from the travellers' index alone (an index-only scan).
    perform set_config('enable_indexscan', 'on', true), set_config('enable_bitmapscan', 'off', true);
    select count(*) < 5000 into v_exact
    from (select 1 from {{entries}} e
          where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id <> p_thread_id
            and leaves_thread_v1(e.consent_scope)
          limit 5000) as x;
    perform set_config('enable_indexscan', 'off', true), set_config('enable_bitmapscan', 'on', true);
  end if;
  loop
    select t.probes, t.probed, t.floor into v_probes, v_probed, v_floor
    from recall_travellers_probe_v2(p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_any_term,
                                    p_require_consent, p_foreign, v_resource_cutoff, p_now, v_probe, v_exact,
                                    p_selection, p_lexical_weight, p_dates) as t;
    v_found := recall_top_v2(v_probes, p_tenant_id, p_resource_id, p_terms, p_any_term, v_resource_cutoff,
                             p_now, p_keep, p_lexical_weight);
    exit when v_probe is null or (v_exact and v_probed < v_probe)
              or greatest((v_found[p_keep]).similarity + p_lexical_weight * (v_found[p_keep]).lexical, p_bar) > v_floor;
    if v_exact then
      v_probe := null;  -- every traveller
    elsif cardinality(v_found) < p_keep and (v_probed < v_probe or v_probe >= 786) then
      -- HNSW ran dry, or the gates applied after it (tombstones, thread
      -- policies) removed too many of its nearest: every traveller, exactly.
      v_exact := true;
      v_probe := null;
    elsif v_probed < v_probe or v_probe >= 786 then
      exit;  -- approximate: the nearest through HNSW, ranked exactly
    else
      v_probe := 786;  -- its search list fills pgvector's longest, 1,000
    end if;
  end loop;
  return v_found;
end;
$$;
