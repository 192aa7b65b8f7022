-- recall_v4's narrow first pass over one thread: the p_limit rows (all of them
-- when p_limit is NULL) of the thread whose upper bound on the score is
-- highest, injectable (is_injectable_v1 under p_require_consent), live at
-- p_now (is_live_v2 under p_cutoff) and kept by p_selection (selects_v1);
-- each row as its ctid (same snapshot as the caller, a stable function) and
--   upper = similarity + p_lexical_weight when the row holds a query term, else similarity
-- (lexical <= 1, so no row's exact score exceeds it): its tsvector holds a
-- term of p_any_term, or a date term of p_dates names a part of its event
-- date (occurred_at, else created_at: names_event_date_v1; a NULL p_dates, a
-- query without date terms, costs one test per row that holds no term). Tombstones are not read
-- here. One single-table statement on the tenant's predicate, which Citus
-- plans on its fast path (for the shard directly, never printed back to text);
-- plain PostgreSQL runs it from its plan cache.
create or replace function {{schema}}.recall_bounds_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_query_embedding vector, p_any_term tsquery,
  p_require_consent boolean, p_cutoff timestamptz, p_now timestamptz, p_limit integer,
  p_selection {{schema}}.selection_v1, p_lexical_weight double precision, p_dates {{schema}}.date_terms_v1)
returns table (row_id tid, upper double precision)
language plpgsql stable
set search_path from current
as $$
begin
  return query
    -- One expression per row, so nothing is computed twice and the sort's tuples
    -- are two columns wide.
    select e.ctid,
           (1::float8 - (e.embedding <=> p_query_embedding))
           + case when e.text_tsv @@ p_any_term
                    or names_event_date_v1(coalesce(e.occurred_at, e.created_at), p_dates)
                  then p_lexical_weight else 0::float8 end as upper
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and is_injectable_v1(e.consent_visible, e.consent_revoked_at, e.legal_hold, e.consent_source,
                           p_require_consent)
      and is_live_v2(e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at, p_cutoff, p_now)
      and selects_v1(e.metadata, e.occurred_at, e.created_at, p_selection)
    order by 2 desc
    limit p_limit;
end;
$$;
