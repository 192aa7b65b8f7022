-- Takes the transaction-level advisory lock p_key, which serialises the
-- writers of one of p_tenant_id's threads or RAG scopes (lock_thread_v1,
-- remember_batch_v2, rag_upsert_v1). Under Citus the lock must be taken on
-- the node that holds the tenant's shards, where every delegated call runs
-- and takes its locks. A call Citus did not delegate (any shape but
-- "select f(...)" or "select * from f(...)", or a call from another
-- function) runs on the coordinator, where its lock would exclude none of the
-- tenant's other writers: it raises PM017 instead.
create or replace function {{schema}}.lock_key_v1(p_tenant_id text, p_key bigint)
returns void
language plpgsql volatile
set search_path from current
as $$
declare
  v_here boolean;
begin
  if citus_installed_v1() then
    -- (An install not yet distributed has no placements: its locks are local.)
    execute 'select coalesce(bool_or(p.groupid = (select l.groupid from pg_catalog.pg_dist_local_group l)), true) '
            'from pg_catalog.pg_dist_partition d '
            'join pg_catalog.pg_dist_placement p '
            '  on p.shardid = pg_catalog.get_shard_id_for_distribution_column(d.logicalrelid, $2) '
            'where d.logicalrelid = $1'
      into v_here using '{{entries}}'::regclass, p_tenant_id;
    if not v_here then
      raise exception 'this call runs on a node that does not hold tenant %: under Citus call an API function '
                      'alone, as select * from f(...), so that it is delegated', quote_literal(p_tenant_id)
        using errcode = 'PM017';
    end if;
  end if;
  perform pg_advisory_xact_lock(p_key);
end;
$$;
