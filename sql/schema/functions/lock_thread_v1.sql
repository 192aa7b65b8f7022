-- Serialises every writer of one thread (remember, consent, correct,
-- invalidate, purge, reembed) for the rest of the transaction: automatic
-- sequences never interleave, an unpinned thread's first width is fixed
-- before a second writer checks it, and no tombstone is lost to a race.
create or replace function {{schema}}.lock_thread_v1(p_tenant_id text, p_resource_id text, p_thread_id text)
returns void
language sql volatile
begin atomic
  select pg_advisory_xact_lock(
    hashtextextended(p_tenant_id || chr(31) || p_resource_id || chr(31) || p_thread_id, 0));
end;
