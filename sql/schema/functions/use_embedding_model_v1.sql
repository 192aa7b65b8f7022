-- API function (prism_memory/operations.py, a guard): it runs as the schema
-- owner (security definer), like every API function.
--
-- The embedding-model guard of a write. Call it in the same transaction as,
-- and before, the write it guards (remember_v2, remember_batch_v2, correct_v2,
-- reembed_v1): it takes the lock of each thread named (lock_thread_v1, in
-- lock-key order, as remember_batch_v2 does), so the record it checks cannot
-- change before the write commits. The threads are p_resource_ids[i] /
-- p_thread_ids[i] (parallel, one-dimensional, at most 10,000; a thread may
-- repeat). For each thread, in (resource_id, thread_id) code-point order:
--   1. the width rule first (assert_dimensions_v2: the pinned width, else
--      the width of the thread's stored entries): PM004;
--   2. the thread's record (model id and width) is compared with p_model_id
--      and p_dimensions. Another model id, while the thread holds entries and
--      p_switch is false, raises PM018: the write would mix two vector spaces.
--      Otherwise the record becomes (p_model_id, p_dimensions): a thread
--      without a record (new, or written before this guard or by embedders
--      without an identity) records the first model that writes it, an
--      emptied thread takes the new model, and p_switch (rebuild_index: the
--      write re-embeds the thread's entries with the new model) switches it.
-- PM001 for a bad scope or arrays, PM017 for a model id that is not a
-- non-blank string of at most 256 bytes, a width outside 1..16000, or a null
-- p_switch (never read as a switch).
create or replace function {{schema}}.use_embedding_model_v1(
  p_tenant_id text, p_resource_ids text[], p_thread_ids text[],
  p_model_id text, p_dimensions integer, p_switch boolean default false)
returns void
language plpgsql volatile security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, null);  -- first: may the caller act for this tenant?
  v_thread record;
  v_recorded record;
begin
  if coalesce(cardinality(p_resource_ids), 0) <> coalesce(cardinality(p_thread_ids), 0)
     or coalesce(cardinality(p_thread_ids), 0) not between 1 and 10000
     or array_ndims(p_resource_ids) > 1 or array_ndims(p_thread_ids) > 1 then
    raise exception 'use_embedding_model_v1: name 1 to 10000 threads in two parallel one-dimensional arrays'
      using errcode = 'PM001';
  end if;
  perform assert_scope_v2(p_tenant_id, g.resource_id, g.thread_id, true)
  from unnest(p_resource_ids, p_thread_ids) as g(resource_id, thread_id);
  perform assert_embedding_model_v1(p_model_id, p_dimensions);
  if p_switch is null then
    raise exception 'p_switch must be true (rebuild_index switches the model) or false' using errcode = 'PM017';
  end if;
  for v_thread in
    select distinct g.resource_id, g.thread_id,
           hashtextextended(p_tenant_id || chr(31) || g.resource_id || chr(31) || g.thread_id, 0) as key
    from unnest(p_resource_ids, p_thread_ids) as g(resource_id, thread_id)
    order by 3
  loop
    perform lock_thread_v1(p_tenant_id, v_thread.resource_id, v_thread.thread_id);
  end loop;
  for v_thread in
    select t.resource_id, t.thread_id
    from (select distinct g.resource_id, g.thread_id
          from unnest(p_resource_ids, p_thread_ids) as g(resource_id, thread_id)) as t
    order by t.resource_id collate "C", t.thread_id collate "C"
  loop
    perform assert_dimensions_v2(p_tenant_id, v_thread.resource_id, v_thread.thread_id, p_dimensions);
    select m.model_id, m.dimensions into v_recorded
    from {{embedding_model}} m
    where m.tenant_id = p_tenant_id and m.resource_id = v_thread.resource_id and m.thread_id = v_thread.thread_id;
    continue when found and v_recorded.model_id = p_model_id and v_recorded.dimensions = p_dimensions;
    if found and v_recorded.model_id <> p_model_id and not p_switch
       and exists (select 1 from {{entries}} e
                   where e.tenant_id = p_tenant_id and e.resource_id = v_thread.resource_id
                     and e.thread_id = v_thread.thread_id) then
      raise exception 'thread % (resource %) holds entries embedded with model % (% dimensions), not %: '
                      'run rebuild_index with the new embedder to switch the thread''s model',
        quote_literal(v_thread.thread_id), quote_literal(v_thread.resource_id),
        quote_literal(v_recorded.model_id), v_recorded.dimensions, quote_literal(p_model_id)
        using errcode = 'PM018';
    end if;
    insert into {{embedding_model}} as m (tenant_id, resource_id, thread_id, model_id, dimensions, updated_at)
    values (p_tenant_id, v_thread.resource_id, v_thread.thread_id, p_model_id, p_dimensions, now())
    on conflict (tenant_id, resource_id, thread_id) do update
      set model_id = excluded.model_id, dimensions = excluded.dimensions, updated_at = excluded.updated_at;
  end loop;
end;
$$;
