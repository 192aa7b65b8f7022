-- Keeps sources_created_at and sources_expire_at (the oldest created_at and
-- the earliest expires_at among an entry's stored lineage sources,
-- transitively) right after p_ids of the thread were written (remember_v2,
-- under the thread's lock). First each written entry takes them afresh from
-- its direct sources written before (a source's own values or its sources',
-- the earlier); then every entry of the thread derived from a written one
-- (this batch's entries among them, whatever their order), transitively,
-- takes the written entries' values where they are earlier than its own so
-- far: one recursive statement that follows an edge only while it moves a
-- value earlier (an entry whose values stand is not passed through, so a
-- rewrite that changes no expiry reads one level of dependents), and
-- terminates on lineage cycles (UNION keeps each (id, values) once). A
-- source's expiry only ever moves its dependents' earlier: a later one (a
-- longer ttl written again) reaches a dependent when that is written again.
-- Reads the thread through the lineage index; a write of entries nothing is
-- derived from, without lineage of their own, changes no row.
create or replace function {{schema}}.lineage_expiry_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[])
returns void
language plpgsql volatile
set search_path from current
as $$
declare
  v_sources text[];
begin
  update {{entries}} e
  set (sources_created_at, sources_expire_at) = (
    select min(least(s.created_at, s.sources_created_at)), min(least(s.expires_at, s.sources_expire_at))
    from jsonb_array_elements_text(coalesce(e.metadata -> '_lineage' -> 'sourceIds', '[]')) as source(id)
    join {{entries}} s
      on s.tenant_id = p_tenant_id and s.resource_id = p_resource_id and s.thread_id = p_thread_id
     and s.id = source.id and s.id <> all(p_ids))
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    and e.id = any(p_ids)
    -- an entry without lineage and without stored times keeps its row version
    and (e.metadata -> '_lineage' -> 'sourceIds' is not null
         or e.sources_created_at is not null or e.sources_expire_at is not null);
  -- The written entries something of the thread is derived from: the only ones to follow.
  v_sources := array(
    select distinct source.id
    from {{entries}} d
    cross join lateral jsonb_array_elements_text(d.metadata -> '_lineage' -> 'sourceIds') as source(id)
    where d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
      and (d.metadata -> '_lineage' -> 'sourceIds') ?| p_ids and source.id = any(p_ids) and source.id <> d.id);
  if cardinality(v_sources) = 0 then
    return;
  end if;

  -- Each row of flow: an entry and values it now has, 'infinity' standing for
  -- no expiry; what moves an entry's values earlier is carried on.
  with recursive flow(id, created_at, expires_at) as (
    select e.id, least(e.created_at, e.sources_created_at),
           coalesce(least(e.expires_at, e.sources_expire_at), 'infinity')
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and e.id = any(v_sources)
    union
    select d.id, least(d.created_at, d.sources_created_at, f.created_at),
           least(coalesce(least(d.expires_at, d.sources_expire_at), 'infinity'), f.expires_at)
    from flow f
    join {{entries}} d
      on d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
     and (d.metadata -> '_lineage' -> 'sourceIds') ? f.id and d.id <> f.id
    where f.created_at < least(d.created_at, d.sources_created_at)
       or f.expires_at < coalesce(least(d.expires_at, d.sources_expire_at), 'infinity')
  )
  update {{entries}} e
  set sources_created_at = case when f.created_at < least(e.created_at, e.sources_created_at)
                                then f.created_at else e.sources_created_at end,
      sources_expire_at = case when f.expires_at < coalesce(least(e.expires_at, e.sources_expire_at), 'infinity')
                               then f.expires_at else e.sources_expire_at end
  from (select f.id, min(f.created_at) as created_at, min(f.expires_at) as expires_at
        from flow f group by f.id) as f
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    and e.id = f.id
    and (f.created_at < least(e.created_at, e.sources_created_at)
         or f.expires_at < coalesce(least(e.expires_at, e.sources_expire_at), 'infinity'));
end;
$$;
