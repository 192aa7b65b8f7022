-- recall_travellers_v2's read of the travellers: the entries of
-- p_resource_id's other threads than p_thread_id that may leave their thread
-- (leaves_thread_v1), of the query's width, outside the threads of p_foreign,
-- injectable (under p_require_consent), live under p_resource_cutoff (the
-- resource's own policy; recall_top_v2 applies each thread's) and kept by
-- p_selection (selects_v1), as probes. A probe's text_tsv is the terms the
-- row holds for the query (held_terms_v2: its text's, and the query's date
-- terms, p_dates, that name a part of its event date).
-- p_exact: as the thread's own are read (recall_bounds_v1), one narrow pass
-- bounds each row's score (similarity, plus p_lexical_weight when its text holds a term of
-- p_any_term or a date term of p_dates names a part of its event date), then the p_limit best bounds (every row when NULL) are read
-- again; floor is the lowest bound among them (the highest a row left out
-- could have). Otherwise the p_limit nearest are read through the travellers'
-- partial HNSW index (pinned installs of at most 2,000 dimensions, whose width
-- is the query's), by pgvector's iterative scan, planned per call so that the
-- planner sees the resource's size; floor is the lowest similarity among them
-- plus p_lexical_weight. probed: how many were read.
create or replace function {{schema}}.recall_travellers_probe_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_any_term tsquery,
  p_require_consent boolean, p_foreign text[], p_resource_cutoff timestamptz, p_now timestamptz, p_limit integer,
  p_exact boolean, p_selection {{schema}}.selection_v1, p_lexical_weight double precision,
  p_dates {{schema}}.date_terms_v1, out probes {{schema}}.recall_probe_v1[], out probed bigint, out floor double precision)
language plpgsql stable
set search_path from current
as $$
declare
  v_width constant integer := vector_dims(p_query_embedding);
begin
  if p_exact then
    select c.probes, c.probed, c.floor into probes, probed, floor
    from (
      with bounds as materialized (
        select e.ctid as row_id,
               (1::float8 - (e.embedding <=> p_query_embedding))
               + case when e.text_tsv @@ p_any_term
                        or names_event_date_v1(coalesce(e.occurred_at, e.created_at), p_dates)
                      then p_lexical_weight else 0::float8 end as upper
        from {{entries}} e
        where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id <> p_thread_id
          and leaves_thread_v1(e.consent_scope) and vector_dims(e.embedding) = v_width
          and e.thread_id <> all (p_foreign)
          and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                               p_require_consent)
          and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
                         p_resource_cutoff, p_now)
          and selects_v1(e.metadata, e.occurred_at, e.created_at, p_selection)
        order by upper desc
        limit p_limit
      )
      select array(select row(e.ctid, p_resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,
                              1::float8 - (e.embedding <=> p_query_embedding),
                              held_terms_v2(e.text_tsv, coalesce(e.occurred_at, e.created_at), p_dates),
                              e.expires_at, e.sources_created_at, e.sources_expire_at)::{{schema}}.recall_probe_v1
                   from bounds b
                   join {{entries}} e on e.tenant_id = p_tenant_id and e.ctid = b.row_id) as probes,
             (select count(*) from bounds) as probed, (select min(b.upper) from bounds b) as floor
    ) as c;
    return;
  end if;
  perform set_config('enable_indexscan', 'on', true);
  perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
  -- A search list a quarter longer than the probe: pgvector's iterative scan
  -- (when the filters leave fewer rows than asked) costs far more than a
  -- longer list.
  perform set_config('hnsw.ef_search', least(1000, p_limit + p_limit / 4 + 16)::text, true);
  execute 'select coalesce(array_agg(row(p.row_id, $2, p.thread_id, p.id, p.sequence, p.importance,'
          || ' p.created_at, p.similarity, p.text_tsv, p.expires_at, p.sources_created_at, p.sources_expire_at)'
          || '::{{schema}}.recall_probe_v1), ''{}''),'
          || ' count(*), min(p.similarity) + $11'
          || ' from (select e.ctid as row_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,'
          || ' e.expires_at, e.sources_created_at, e.sources_expire_at,'
          || ' {{schema}}.held_terms_v2(e.text_tsv, coalesce(e.occurred_at, e.created_at), $12) as text_tsv,'
          || ' 1::float8 - (e.embedding <=> $4) as similarity'
          || ' from {{entries}} e'
          || ' where e.tenant_id = $1 and e.resource_id = $2 and e.thread_id <> $3 and e.thread_id <> all ($9)'
          || ' and {{schema}}.leaves_thread_v1(e.consent_scope)'
          || ' and {{schema}}.is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold,'
          || ' e.consent_source, $5)'
          || ' and {{schema}}.is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at, $6, $7)'
          || ' and {{schema}}.selects_v1(e.metadata, e.occurred_at, e.created_at, $10)'
          || ' order by e.embedding <=> $4 limit $8) as p'
    into probes, probed, floor
    using p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_require_consent, p_resource_cutoff,
          p_now, p_limit, p_foreign, p_selection, p_lexical_weight, p_dates;
  perform set_config('enable_indexscan', 'off', true);  -- as recall_v4 runs
end;
$$;
