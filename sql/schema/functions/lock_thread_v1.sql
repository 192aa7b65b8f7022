-- Serialises every writer of one thread (remember, consent, correct,
-- invalidate, purge, reembed, share) for the rest of the transaction:
-- automatic sequences never interleave, an unpinned thread's first width is
-- fixed before a second writer checks it, and no tombstone or share grant is
-- lost to a race. The lock only helps a transaction that reads what the
-- writer before it committed, so any isolation level but READ COMMITTED
-- raises PM017 (a REPEATABLE READ snapshot predates the lock), as does a
-- call Citus did not delegate (lock_key_v1).
create or replace function {{schema}}.lock_thread_v1(p_tenant_id text, p_resource_id text, p_thread_id text)
returns void
language plpgsql volatile
set search_path from current
as $$
begin
  if pg_catalog.current_setting('transaction_isolation') <> 'read committed' then
    raise exception 'writes need READ COMMITTED isolation; this transaction is %',
      pg_catalog.current_setting('transaction_isolation') using errcode = 'PM017';
  end if;
  perform lock_key_v1(p_tenant_id,
    hashtextextended(p_tenant_id || chr(31) || p_resource_id || chr(31) || p_thread_id, 0));
end;
$$;
