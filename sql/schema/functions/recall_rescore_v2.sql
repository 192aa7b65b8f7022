-- recall_v4's exact scores of rows its first pass kept (p_row_ids: ctids of
-- the tenant's entries in the thread, read in the caller's snapshot):
--   similarity = 1 - cosine distance, lexical = lexical_score_v2 over p_terms,
--   the query's date terms p_dates matched against the entry's event date
--   (occurred_at, else created_at)
-- Rows of other scopes (none, from recall_bounds_v2) are left out;
-- tombstones are the caller's to apply. A single-table statement on the
-- tenant's predicate (see recall_bounds_v2), read by a TID scan only: a
-- generic plan otherwise took a bitmap scan of the thread and compared every
-- row with every ctid given.
create or replace function {{schema}}.recall_rescore_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_row_ids tid[], p_query_embedding vector,
  p_terms text[], p_any_term tsquery, p_dates {{schema}}.date_terms_v1)
returns table (row_id tid, id text, sequence bigint, importance double precision, created_at timestamptz,
               similarity double precision, lexical double precision)
language plpgsql stable
set search_path from current
set enable_seqscan = off
set enable_bitmapscan = off
as $$
begin
  return query
    select e.ctid, e.id, e.sequence, e.importance, e.created_at,
           1::float8 - (e.embedding <=> p_query_embedding),
           lexical_score_v2(e.text_tsv, coalesce(e.occurred_at, e.created_at), p_terms, p_any_term, p_dates)
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.ctid = any(p_row_ids)
      and e.resource_id = p_resource_id and e.thread_id = p_thread_id;
end;
$$;
