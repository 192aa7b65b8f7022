-- prism-memory schema revision 0005: correct_v2.
--
-- correct_v1 invalidates the corrected entry's dependents but never the entry
-- itself; in a lineage cycle (a derived from c, c derived from a) that left the
-- entry injectable although one of its own sources had just been invalidated.
-- correct_v2 re-derives the corrected entry from its sources afterwards
-- ("multi-source facts stay injectable only if none of their sources are
-- invalidated"). correct_v1 stays for direct callers. Template rules as in
-- 0001; frozen once released.

{{pin_search_path}}

-- file functions/install_info_v1.sql
create or replace function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
set search_path from current
as $$
  select {{schema_version}}, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;
-- end of functions/install_info_v1.sql


-- file functions/correct_v2.sql
-- correct_v1, then the corrected entry is re-derived from its sources; returns
-- the record and every id invalidated (the entry last, when it is one of them).
create or replace function {{schema}}.correct_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_text text, p_embedding vector, p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_record {{schema}}.entry_record_v1;
begin
  -- correct_v1 takes the thread's lock, held until the transaction ends.
  select * into v_record
  from correct_v1(p_tenant_id, p_resource_id, p_thread_id, p_entry_id, p_text, p_embedding, p_now);
  -- The entry keeps its lineage: if the walk just invalidated one of its own
  -- sources (a lineage cycle), it is invalid too.
  if not exists (select 1 from {{invalidation}} i
                 where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                   and i.thread_id = p_thread_id and i.entry_id = p_entry_id) then
    perform tombstone_from_sources_v1(p_tenant_id, p_resource_id, p_thread_id, array[p_entry_id], p_now);
    if exists (select 1 from {{invalidation}} i
               where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
                 and i.thread_id = p_thread_id and i.entry_id = p_entry_id) then
      v_record.invalidated := v_record.invalidated || p_entry_id;
    end if;
  end if;
  return next v_record;
end;
$$;
-- end of functions/correct_v2.sql


revoke execute on function {{schema}}.correct_v2(text, text, text, text, text, vector, timestamptz) from public;
alter function {{schema}}.correct_v2(text, text, text, text, text, vector, timestamptz) security definer;

reset search_path;
