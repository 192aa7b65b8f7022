-- Reverts revision 0015.

{{pin_search_path}}

-- file functions/install_info_v1.sql
-- What this install is: checked by the Python caller before any other call.
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

-- file functions/invalidate_v1.sql
-- Tombstones p_ids' dependents (every entry of the thread whose
-- _lineage.sourceIds holds an invalidated id, transitively) and, unless
-- p_reason is 'corrected', p_ids themselves; with 'held' it also sets the legal
-- hold. The walk is breadth-first over distinct lineage edges. Caps: at most
-- 64 ids, 256 edges, and new dependents no deeper than 8 levels;
-- over a cap raises PM010 and nothing changes. Returns every tombstoned id.
-- Reasons: deleted, held, revoked, corrected, expired, source-invalidated.
-- Each step of the walk is one pass over the thread, whatever the frontier's size.
create or replace function {{schema}}.invalidate_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_ids text[], p_reason text,
  p_now timestamptz default now())
returns table (entry_id text)
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_visited text[] := array(select distinct x from unnest(p_ids) as x);
  v_frontier text[] := v_visited;
  v_edges text[] := '{}';  -- 'source' || chr(31) || 'dependent'
  v_found text[];
  v_new text[];
  v_depth integer := 0;
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if coalesce(cardinality(p_ids), 0) not between 1 and 64 then
    raise exception 'invalidate: between 1 and 64 ids per call, got %', coalesce(cardinality(p_ids), 0)
      using errcode = 'PM005';
  end if;
  if p_reason is null
     or p_reason not in ('deleted', 'held', 'revoked', 'corrected', 'expired', 'source-invalidated') then
    raise exception 'invalidate: unknown reason %', p_reason using errcode = 'PM002';
  end if;
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);

  while cardinality(v_frontier) > 0 loop
    v_depth := v_depth + 1;
    -- One pass over the thread per step: the entries naming any frontier id
    -- (?| is one test per row; an entry without lineage fails it at once), then
    -- their edges from the frontier.
    v_found := array(
      select distinct source.id || chr(31) || d.id
      from {{entries}} d
      cross join lateral jsonb_array_elements_text(d.metadata -> '_lineage' -> 'sourceIds') as source(id)
      where d.tenant_id = p_tenant_id and d.resource_id = p_resource_id and d.thread_id = p_thread_id
        and (d.metadata -> '_lineage' -> 'sourceIds') ?| v_frontier
        and source.id = any(v_frontier) and d.id <> source.id);
    v_edges := array(select distinct x from unnest(v_edges || v_found) as x);
    if cardinality(v_edges) > 256 then
      raise exception 'lineage walk passed the cap of 256 edges' using errcode = 'PM010';
    end if;
    v_new := array(select distinct split_part(x, chr(31), 2) from unnest(v_found) as x
                   except select unnest(v_visited));
    if cardinality(v_new) > 0 and v_depth > 8 then
      raise exception 'lineage walk passed the cap of depth 8' using errcode = 'PM010';
    end if;
    v_visited := v_visited || v_new;
    v_frontier := v_new;
  end loop;

  insert into {{invalidation}}
    (tenant_id, resource_id, thread_id, entry_id, reason, source_entry_id, sequence, created_at)
  select p_tenant_id, p_resource_id, p_thread_id, e.id, p_reason,
         case when e.id = any(p_ids) then e.id end, e.sequence, p_now
  from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    and e.id = any(v_visited)
    and (p_reason <> 'corrected' or not (e.id = any(p_ids)))
  on conflict do nothing;
  if p_reason = 'held' then
    update {{entries}} e set legal_hold = true, updated_at = p_now
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = any(p_ids);
  end if;

  return query
    select e.id from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
      and e.id = any(v_visited)
      and (p_reason <> 'corrected' or not (e.id = any(p_ids)))
    order by e.id collate "C";
end;
$$;
-- end of functions/invalidate_v1.sql

-- file functions/set_consent_v1.sql
-- Grants or revokes consent on one entry without re-embedding. NULL leaves a
-- field as it is. Revoking (p_visible false, or p_revoked_at given) writes the
-- tombstones first (invalidate_v1 'revoked'); granting (p_visible true) clears
-- the entry's tombstone and its revoked_at, unless one of its own sources is
-- still invalid (dependents stay invalidated: regenerate them from the
-- remaining evidence). A legacy entry
-- becomes explicitly consented (source user, scope thread unless given).
create or replace function {{schema}}.set_consent_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_entry_id text,
  p_visible boolean default null, p_source text default null, p_scope text default null,
  p_granted_at timestamptz default null, p_revoked_at timestamptz default null,
  p_now timestamptz default now())
returns setof {{schema}}.entry_record_v1
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_revoking boolean := p_visible is false or p_revoked_at is not null;
  v_granting boolean := p_visible is true and p_revoked_at is null;
  v_invalidated text[] := '{}';
begin
  p_now := v_clock;  -- the server's clock for a tenant-bound role
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  perform lock_thread_v1(p_tenant_id, p_resource_id, p_thread_id);
  if p_source is not null and p_source not in ('user', 'agent', 'system') then
    raise exception 'consent source must be user, agent or system, got %', p_source using errcode = 'PM002';
  end if;
  if p_scope is not null and p_scope not in ('thread', 'profile', 'user') then
    raise exception 'consent scope must be thread, profile or user, got %', p_scope using errcode = 'PM002';
  end if;
  perform assert_time_v1(p_granted_at, 'granted_at'), assert_time_v1(p_revoked_at, 'revoked_at');
  perform 1 from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id
  for update;
  if not found then
    raise exception 'no entry % in this thread', p_entry_id using errcode = 'PM011';
  end if;
  if v_revoking then
    v_invalidated := array(select x.entry_id
                           from invalidate_v1(p_tenant_id, p_resource_id, p_thread_id,
                                              array[p_entry_id], 'revoked', p_now) as x);
  elsif v_granting then
    delete from {{invalidation}} i
    where i.tenant_id = p_tenant_id and i.resource_id = p_resource_id
      and i.thread_id = p_thread_id and i.entry_id = p_entry_id;
  end if;
  update {{entries}} e
  set consent_source = coalesce(p_source, e.consent_source, 'user'),
      consent_scope = coalesce(p_scope, e.consent_scope, 'thread'),
      consent_visible = case when v_revoking then false else coalesce(p_visible, e.consent_visible) end,
      consent_granted_at = case when v_granting then coalesce(p_granted_at, p_now)
                                else coalesce(p_granted_at, e.consent_granted_at) end,
      consent_revoked_at = case when v_granting then null
                                when v_revoking then coalesce(p_revoked_at, p_now)
                                else e.consent_revoked_at end,
      updated_at = p_now
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
    and e.thread_id = p_thread_id and e.id = p_entry_id;
  if v_granting then
    -- Still invalid while one of its own sources is.
    perform tombstone_from_sources_v1(p_tenant_id, p_resource_id, p_thread_id, array[p_entry_id], p_now);
  end if;
  return query
    select e.id, e.text, e.metadata, e.sequence, e.importance, e.consent_source, e.consent_scope,
           e.consent_visible, e.consent_granted_at, e.consent_revoked_at, e.legal_hold,
           e.created_at, e.updated_at, v_invalidated
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
      and e.thread_id = p_thread_id and e.id = p_entry_id;
end;
$$;
-- end of functions/set_consent_v1.sql


reset search_path;
