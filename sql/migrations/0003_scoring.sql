-- prism-memory schema revision 0003: composite recall scoring (opt-in) and
-- explanations.
--
-- recall_v2 is recall_v1 plus opt-in scoring and explain; recall_v1 stays for
-- callers that use it. Template rules as in 0001; frozen once released.

{{pin_search_path}}

-- file functions/install_info_v1.sql
create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
as $$
  select {{schema_version}}, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;
-- end of functions/install_info_v1.sql


-- file functions/scoring_weights_v1.sql
-- The normalised weights of a scoring request (similarity, recency,
-- importance), or NULLs when neither weight is given (plain recall). Raises
-- PM015 unless each given weight is finite and within [0, 1] and, when a
-- recency weight is given, p_half_life_ms is a positive finite number.
-- Similarity keeps what remains of 1; weights summing over 1 are scaled down
-- to sum 1 (similarity 0).
create or replace function {{schema}}.scoring_weights_v1(
  p_recency_weight double precision, p_importance_weight double precision, p_half_life_ms double precision,
  out similarity_weight double precision, out recency_weight double precision,
  out importance_weight double precision)
language plpgsql immutable
as $$
declare
  v_total double precision;
begin
  if p_recency_weight is not null and not (p_recency_weight between 0 and 1) then
    raise exception 'recency_weight must be a finite number within [0, 1], got %', p_recency_weight
      using errcode = 'PM015';
  end if;
  if p_importance_weight is not null and not (p_importance_weight between 0 and 1) then
    raise exception 'importance_weight must be a finite number within [0, 1], got %', p_importance_weight
      using errcode = 'PM015';
  end if;
  if p_recency_weight is not null and p_half_life_ms is null then
    raise exception 'half_life_ms is required with a recency weight' using errcode = 'PM015';
  end if;
  if p_half_life_ms is not null
     and not (p_half_life_ms > 0 and p_half_life_ms < 'Infinity'::double precision) then
    raise exception 'half_life_ms must be a positive finite number, got %', p_half_life_ms
      using errcode = 'PM015';
  end if;
  if p_recency_weight is null and p_importance_weight is null then
    return;
  end if;
  recency_weight := coalesce(p_recency_weight, 0);
  importance_weight := coalesce(p_importance_weight, 0);
  v_total := recency_weight + importance_weight;
  if v_total > 1 then
    recency_weight := recency_weight / v_total;
    importance_weight := importance_weight / v_total;
    similarity_weight := 0;
  else
    similarity_weight := 1 - v_total;
  end if;
end;
$$;
-- end of functions/scoring_weights_v1.sql


-- file functions/recency_v1.sql
-- Recency of an entry created at p_created_at, at p_now:
-- 0.5 ^ (max(0, age in ms) / p_half_life_ms), the age exact to the
-- microsecond; 0 past 1074 half-lives, where the power underflows (tested
-- as age / 1074 > half-life, which cannot overflow).
create or replace function {{schema}}.recency_v1(p_now timestamptz, p_created_at timestamptz, p_half_life_ms double precision)
returns double precision
language sql immutable parallel safe
return (select case when v.age_ms / 1074 > p_half_life_ms then 0::float8
                    else power(0.5::float8, v.age_ms / p_half_life_ms) end
        from (select greatest(0::float8, (extract(epoch from (p_now - p_created_at)) * 1000)::float8)
                     as age_ms) as v);
-- end of functions/recency_v1.sql


-- file functions/recall_v2.sql
-- Semantic recall, as recall_v1, plus opt-in composite scoring and explain.
--
-- Without weights the hits are exactly recall_v1's (recency NULL, importance
-- as stored). With them (scoring_weights_v1), the top (top_k x 4) candidates
-- by the default score are re-ranked by
--   score = w_similarity * (similarity + 0.25 * lexical)
--         + w_recency * 0.5 ^ (max(0, now - created_at in ms) / half_life_ms)
--         + w_importance * coalesce(importance, 1.0)
-- and cut to top_k, ties by sequence asc, id asc (code-point order); the hit
-- rows carry recency and the importance used. With p_explain, rows of kind
-- 'gate' follow: for each gate (id = scope, hold, consent, invalidation),
-- rank = how many entries it removed, each counted at the first gate it
-- fails in that order. scope counts the parent thread's entries outside a
-- live share grant (or of another width) when p_share_parent_thread_id is set.
create or replace function {{schema}}.recall_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_query_embedding vector, p_query_text text default '',
  p_top_k integer default 8, p_message_range integer default 0,
  p_require_consent boolean default false, p_share_parent_thread_id text default null,
  p_now timestamptz default now(),
  p_recency_weight double precision default null, p_importance_weight double precision default null,
  p_half_life_ms double precision default null, p_explain boolean default false)
returns table (kind text, rank integer, resource_id text, thread_id text, id text, text text,
               metadata jsonb, sequence bigint, importance double precision,
               similarity double precision, lexical double precision, recency double precision,
               score double precision, created_at timestamptz, updated_at timestamptz)
language plpgsql stable
set search_path from current
set plan_cache_mode = force_generic_plan
set random_page_cost = 1.1
as $$
declare
  v_weights record := scoring_weights_v1(p_recency_weight, p_importance_weight, p_half_life_ms);
  v_scored boolean := p_recency_weight is not null or p_importance_weight is not null;
  v_terms text[] := lexical_terms_v1(coalesce(p_query_text, ''));
  -- Any-term query: terms hold no quote or backslash, so quote_literal is a safe operand.
  v_any_term tsquery := (select string_agg(quote_literal(term), ' | ')::tsquery from unnest(v_terms) as term);
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_top_k is null or p_top_k < 1 or p_top_k > 32 then
    raise exception 'top_k must be between 1 and 32, got %', p_top_k using errcode = 'PM005';
  end if;
  if p_message_range is null or p_message_range < 0 or p_message_range > 4 then
    raise exception 'message_range must be between 0 and 4, got %', p_message_range
      using errcode = 'PM005';
  end if;
  if octet_length(p_query_text) > 65536 then
    raise exception 'the query text is % bytes, over the 64 KiB hard cap', octet_length(p_query_text)
      using errcode = 'PM006';
  end if;
  if p_share_parent_thread_id is not null and is_blank_v1(p_share_parent_thread_id) then
    raise exception 'share_from_parent_thread_id must not be blank' using errcode = 'PM001';
  end if;
  if p_explain is null then
    raise exception 'explain must be true or false' using errcode = 'PM005';
  end if;
  perform assert_embedding_v1(p_query_embedding, 'the query embedding');
  perform assert_dimensions_v1(p_tenant_id, p_resource_id, p_thread_id, vector_dims(p_query_embedding));

  return query
    with grants as (
      select g.resource_id, g.parent_thread_id as thread_id, g.source_ids
      from {{share_grant}} g
      where p_share_parent_thread_id is not null
        and g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
        and g.child_thread_id = p_thread_id and g.parent_thread_id = p_share_parent_thread_id
        and (g.expires_at is null or g.expires_at > p_now)
    ), scored as (
      (select e.resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,
              1::float8 - (e.embedding <=> p_query_embedding) as similarity,
              lexical_score_v1(e.text_tsv, v_terms, v_any_term) as lexical
       from {{entries}} e
       where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
         and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                              p_require_consent)
         and not exists (select 1 from {{invalidation}} i
                         where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                           and i.thread_id = p_thread_id and i.entry_id = e.id)
       offset 0)
      union all
      (select e.resource_id, e.thread_id, e.id, e.sequence, e.importance, e.created_at,
              1::float8 - (e.embedding <=> p_query_embedding) as similarity,
              lexical_score_v1(e.text_tsv, v_terms, v_any_term) as lexical
       from grants g
       join {{entries}} e
         on e.tenant_id = p_tenant_id and e.resource_id = g.resource_id
        and e.thread_id = g.thread_id and e.id = any(g.source_ids)
       where vector_dims(e.embedding) = vector_dims(p_query_embedding)
         and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                              p_require_consent)
         and not exists (select 1 from {{invalidation}} i
                         where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                           and i.thread_id = e.thread_id and i.entry_id = e.id)
       offset 0)
    ), candidates as (
      -- Plain recall keeps top_k; scoring re-ranks the top (top_k x 4).
      select s.*, s.similarity + 0.25::float8 * s.lexical as base
      from scored s
      order by s.similarity + 0.25::float8 * s.lexical desc, s.sequence asc, s.id collate "C" asc,
               s.thread_id collate "C" asc, s.resource_id collate "C" asc
      limit case when v_scored then p_top_k * 4 else p_top_k end
    ), blended as (
      select c.resource_id, c.thread_id, c.id, c.sequence, c.similarity, c.lexical,
             case when v_scored and p_half_life_ms is not null
                  then recency_v1(p_now, c.created_at, p_half_life_ms)
             end as recency,
             case when v_scored then greatest(0::float8, least(1::float8, coalesce(c.importance, 1::float8)))
                  else c.importance end as importance,
             c.base
      from candidates c
    ), hits as (
      select b.resource_id, b.thread_id, b.id, b.sequence, b.similarity, b.lexical, b.recency, b.importance,
             case when v_scored
                  then v_weights.similarity_weight * b.base
                       + v_weights.recency_weight * coalesce(b.recency, 0::float8)
                       + v_weights.importance_weight * b.importance
                  else b.base end as score
      from blended b
      order by score desc, b.sequence asc, b.id collate "C" asc,
               b.thread_id collate "C" asc, b.resource_id collate "C" asc
      limit p_top_k
    ), adjacent as (
      select distinct e.resource_id, e.thread_id, e.id, e.sequence
      from hits h
      join {{entries}} e
        on e.tenant_id = p_tenant_id and e.resource_id = h.resource_id and e.thread_id = h.thread_id
       and e.sequence between h.sequence - p_message_range and h.sequence + p_message_range
      where p_message_range > 0
        and not exists (select 1 from hits r
                        where r.resource_id = e.resource_id and r.thread_id = e.thread_id and r.id = e.id)
        and ((e.resource_id = p_resource_id and e.thread_id = p_thread_id)
             or exists (select 1 from grants g
                        where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                          and e.id = any(g.source_ids)))
        and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                             p_require_consent)
        and not exists (select 1 from {{invalidation}} i
                        where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                          and i.thread_id = e.thread_id and i.entry_id = e.id)
    ), gates as (
      -- Only with p_explain: the thread's entries and the entries live grants
      -- name (nothing else of another thread), each counted at the first gate
      -- that removes it.
      select case
               when not (e.resource_id = p_resource_id and e.thread_id = p_thread_id)
                    and vector_dims(e.embedding) <> vector_dims(p_query_embedding) then 'scope'
               when e.legal_hold then 'hold'
               when not is_injectable_v1(e.consent_visible, e.consent_revoked_at, false, e.consent_source,
                                         p_require_consent) then 'consent'
               when exists (select 1 from {{invalidation}} i
                            where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                              and i.thread_id = e.thread_id and i.entry_id = e.id) then 'invalidation'
             end as gate
      from {{entries}} e
      where p_explain
        and e.tenant_id = p_tenant_id
        and ((e.resource_id = p_resource_id and e.thread_id = p_thread_id)
             or exists (select 1 from grants g
                        where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                          and e.id = any(g.source_ids)))
    ), picked as (
      select 'hit'::text as kind,
             (row_number() over (order by h.score desc, h.sequence asc, h.id collate "C" asc,
                                          h.thread_id collate "C" asc, h.resource_id collate "C" asc))::integer as rank,
             h.resource_id, h.thread_id, h.id, h.similarity, h.lexical, h.recency, h.importance, h.score
      from hits h
      union all
      select 'adjacent'::text,
             (row_number() over (order by a.sequence, a.id collate "C", a.thread_id collate "C",
                                          a.resource_id collate "C"))::integer,
             a.resource_id, a.thread_id, a.id, null::float8, null::float8, null::float8, null::float8,
             null::float8
      from adjacent a
    )
    select p.kind, p.rank, e.resource_id, e.thread_id, e.id, e.text, e.metadata, e.sequence,
           case when p.kind = 'hit' then p.importance else e.importance end,
           p.similarity, p.lexical, p.recency, p.score, e.created_at, e.updated_at
    from picked p
    join {{entries}} e
      on e.tenant_id = p_tenant_id and e.resource_id = p.resource_id
     and e.thread_id = p.thread_id and e.id = p.id
    union all
    select 'gate'::text, coalesce(n.removed, 0)::integer, null::text, null::text, g.gate, null::text,
           null::jsonb, null::bigint, null::float8, null::float8, null::float8, null::float8, null::float8,
           null::timestamptz, null::timestamptz
    from unnest(array['scope', 'hold', 'consent', 'invalidation']) with ordinality as g(gate, position)
    left join (select x.gate, count(*) as removed from gates x where x.gate is not null group by x.gate) n
      on n.gate = g.gate
    where p_explain
    order by 1 desc, 2;
end;
$$;
-- end of functions/recall_v2.sql


reset search_path;
