-- The oldest created_at an entry of the thread (of the resource, when
-- p_thread_id is NULL: the resource's own policy only) may have at p_now and
-- still be recalled, exported or injected: p_now minus the smallest maximum
-- age (24-hour days) of the stored retention policies that cover it, the
-- resource's (thread_id '') and the thread's; '-infinity' when none does.
-- PL/pgSQL, so its plan is cached for the session (a SQL function's was made
-- again in every transaction: about 1 ms of a small thread's recall).
create or replace function {{schema}}.retention_cutoff_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_now timestamptz)
returns timestamptz
language plpgsql stable
set search_path from current
as $$
declare
  v_cutoff timestamptz;
begin
  -- One single-table statement (no subquery): Citus plans it on its fast path.
  select coalesce(max(p_now - p.max_age_days * interval '24 hours'), '-infinity'::timestamptz) into v_cutoff
  from {{retention_policy}} p
  where p.tenant_id = p_tenant_id and p.resource_id = p_resource_id
    and p.thread_id in ('', coalesce(p_thread_id, ''));
  return v_cutoff;
end;
$$;
