-- recall_v4's explain counts: for each gate, in order (scope, hold, consent,
-- invalidation, expiry, selection), how many entries it removed, each counted
-- at the first gate it fails; selection: those the read's filter or time
-- windows leave out (selects_v1 under p_selection). Counted are the thread's entries, the entries live
-- grants to it name (recall_grants_v1) and, with p_across_threads, every
-- entry of the resource's other threads (nothing else of another thread);
-- scope counts those of them that may not take part: kept in their thread by
-- their consent scope, of another width than p_width, or in a thread of
-- p_foreign (one another embedding model wrote). Expiry is measured against
-- each thread's retention cutoff (retention_cutoff_v1).
create or replace function {{schema}}.recall_gates_v2(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_share_parent_thread_id text,
  p_across_threads boolean, p_require_consent boolean, p_width integer, p_foreign text[], p_now timestamptz,
  p_selection {{schema}}.selection_v1)
returns table (gate text, removed integer)
language plpgsql stable
set search_path from current
as $$
begin
  return query
    with grants as (
      select g.resource_id, g.thread_id, g.source_ids
      from recall_grants_v1(p_tenant_id, p_resource_id, p_thread_id, p_share_parent_thread_id, p_now) as g
    ), counted as materialized (
      -- Each entry counted, with the first gate it fails but expiry's and the selection's.
      select e.resource_id, e.thread_id, e.metadata, e.occurred_at, e.created_at, e.expires_at, e.sources_created_at, e.sources_expire_at,
             case
               when not (e.resource_id = p_resource_id and e.thread_id = p_thread_id)
                    and not (vector_dims(e.embedding) = p_width
                             and ((p_across_threads and e.resource_id = p_resource_id
                                   and leaves_thread_v1(e.consent_scope) and e.thread_id <> all (p_foreign))
                                  or exists (select 1 from grants g
                                             where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                                               and e.id = any(g.source_ids)))) then 'scope'
               when e.legal_hold then 'hold'
               when not is_injectable_v1(e.consent_visible, e.consent_revoked_at, false, e.consent_source,
                                         p_require_consent) then 'consent'
               when exists (select 1 from {{invalidation}} i
                            where i.tenant_id = p_tenant_id and i.resource_id = e.resource_id
                              and i.thread_id = e.thread_id and i.entry_id = e.id) then 'invalidation'
             end as gate
      from {{entries}} e
      where e.tenant_id = p_tenant_id
        and ((e.resource_id = p_resource_id and (e.thread_id = p_thread_id or p_across_threads))
             or exists (select 1 from grants g
                        where g.resource_id = e.resource_id and g.thread_id = e.thread_id
                          and e.id = any(g.source_ids)))
    ), cutoffs as (
      select t.resource_id, t.thread_id, retention_cutoff_v1(p_tenant_id, t.resource_id, t.thread_id, p_now) as cutoff
      from (select distinct c.resource_id, c.thread_id from counted c where c.gate is null) as t
    )
    select g.name, coalesce(n.removed, 0)::integer
    from unnest(array['scope', 'hold', 'consent', 'invalidation', 'expiry', 'selection']) with ordinality as g(name, position)
    left join (select coalesce(c.gate, case when not is_live_v2(c.created_at, c.expires_at, c.sources_created_at,
                                                               c.sources_expire_at, t.cutoff, p_now)
                                            then 'expiry' else 'selection' end) as name,
                      count(*) as removed
               from counted c
               left join cutoffs t on t.resource_id = c.resource_id and t.thread_id = c.thread_id
               where c.gate is not null
                  or not is_live_v2(c.created_at, c.expires_at, c.sources_created_at, c.sources_expire_at,
                                    t.cutoff, p_now)
                  or not selects_v1(c.metadata, c.occurred_at, c.created_at, p_selection)
               group by 1) as n
      on n.name = g.name
    order by g.position;
end;
$$;
