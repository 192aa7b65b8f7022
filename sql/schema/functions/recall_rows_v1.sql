-- The columns recall_v3 returns of the tenant's entries at p_row_ids (ctids
-- it scored, in its own snapshot), in no order. A single-table statement on
-- the tenant's predicate (see recall_bounds_v1), read by a TID scan only (see
-- recall_rescore_v1).
create or replace function {{schema}}.recall_rows_v1(p_tenant_id text, p_row_ids tid[])
returns table (row_id tid, resource_id text, thread_id text, id text, text text, metadata jsonb,
               sequence bigint, importance double precision, created_at timestamptz, updated_at timestamptz)
language plpgsql stable
set search_path from current
set enable_seqscan = off
set enable_bitmapscan = off
as $$
begin
  return query
    select e.ctid, e.resource_id, e.thread_id, e.id, e.text, e.metadata, e.sequence, e.importance,
           e.created_at, e.updated_at
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.ctid = any(p_row_ids);
end;
$$;
