-- prism-memory schema revision 0011: embedding_models, the embedding-model guard.
--
-- * <table>_embedding_model records, per thread, the model id and width of
--   the embedder whose vectors the thread's entries hold.
-- * use_embedding_model_v1 (new API function) guards a write: called before
--   remember_v1, remember_batch_v1, correct_v2 or reembed_v1 in the same
--   transaction, it locks the threads, applies the width rule, and raises
--   PM018 (EmbeddingModelMismatchError) when a thread that holds entries
--   recorded another model id; otherwise it records the model (p_switch, the
--   rebuild path, switches it).
-- * recall_guarded_v1 (new API function) is recall_v2 behind the guard, in
--   one call: it raises PM018 when the thread, or the parent thread of a live
--   share grant, recorded another model id of the same width, then answers as
--   recall_v2.
-- * assert_embedding_model_v1 (new helper): the two guards' check of the
--   model id and width (PM017).
-- Existing threads have no record: the first guarded write records its model.
-- remember_v1, recall_v2 and the other functions are unchanged.

{{pin_search_path}}

create table {{embedding_model}} (
  tenant_id   text        not null,
  resource_id text        not null,
  thread_id   text        not null,
  model_id    text        not null,
  dimensions  integer     not null check (dimensions between 1 and 16000),
  updated_at  timestamptz not null default now(),
  primary key (tenant_id, resource_id, thread_id)
);
alter table {{embedding_model}} enable row level security;
create policy tenant_isolation on {{embedding_model}}
  using (tenant_id = current_setting('prism_memory.tenant_id', true))
  with check (tenant_id = current_setting('prism_memory.tenant_id', true));

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

-- file functions/assert_embedding_model_v1.sql
-- Raises PM017 unless p_model_id is a non-blank string of at most 256 bytes
-- and p_dimensions a width in 1..16000: the embedder identity the guard
-- functions take (use_embedding_model_v1, recall_guarded_v1), as
-- prism_memory.checks.check_model checks it.
create or replace function {{schema}}.assert_embedding_model_v1(p_model_id text, p_dimensions integer)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_model_id is null or is_blank_v1(p_model_id) or octet_length(p_model_id) > 256 then
    raise exception 'the embedding model id must be a non-blank string of at most 256 bytes' using errcode = 'PM017';
  end if;
  if p_dimensions is null or p_dimensions not between 1 and 16000 then
    raise exception 'the embedding model''s width must be between 1 and 16000, got %', p_dimensions
      using errcode = 'PM017';
  end if;
end;
$$;
-- end of functions/assert_embedding_model_v1.sql

-- file functions/recall_guarded_v1.sql
-- API function (prism_memory/operations.py, a guard): it runs as the schema
-- owner (security definer), like every API function.
--
-- recall_v2 behind the embedding-model guard, in one call: the caller names
-- the model id and width of the embedder of the query (p_model_id,
-- p_dimensions; the other arguments and the rows are recall_v2's). It raises
-- PM018 when a thread whose entries the recall would score recorded another
-- model id of the same width (use_embedding_model_v1 keeps the records): the
-- thread itself, while it holds entries, and the parent thread of each live
-- share grant from p_share_parent_thread_id to this thread, while it holds a
-- granted entry. A thread without a record passes; a record of another width
-- is left to recall_v2's width rule (PM004 for the thread, out of scope for
-- the parent). The check reads the thread's record by primary key and takes
-- no lock; then recall_v2 answers. PM001 for a bad scope, PM017 for a model id
-- that is not a non-blank string of at most 256 bytes or a width outside
-- 1..16000, then recall_v2's errors.
create or replace function {{schema}}.recall_guarded_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_model_id text, p_dimensions integer,
  p_query_embedding vector, p_query_text text default '',
  p_top_k integer default 8, p_message_range integer default 0,
  p_require_consent boolean default false, p_share_parent_thread_id text default null,
  p_now timestamptz default now(),
  p_recency_weight double precision default null, p_importance_weight double precision default null,
  p_half_life_ms double precision default null, p_explain boolean default false)
returns table (kind text, rank integer, resource_id text, thread_id text, id text, text text,
               metadata jsonb, sequence bigint, importance double precision,
               similarity double precision, lexical double precision, recency double precision,
               score double precision, created_at timestamptz, updated_at timestamptz)
language plpgsql stable security definer
set search_path from current
as $$
declare
  v_clock constant timestamptz := tenant_access_v1(p_tenant_id, p_now);  -- first: may the caller act for this tenant?
  v_recorded record;
begin
  perform assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  perform assert_embedding_model_v1(p_model_id, p_dimensions);
  select m.model_id into v_recorded
  from {{embedding_model}} m
  where m.tenant_id = p_tenant_id and m.resource_id = p_resource_id and m.thread_id = p_thread_id
    and m.dimensions = p_dimensions and m.model_id <> p_model_id;
  if found and exists (select 1 from {{entries}} e
                       where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
                         and e.thread_id = p_thread_id) then
    raise exception 'thread % holds entries embedded with model % (% dimensions), not %: '
                    'recall with that model, or rebuild_index the thread with this one',
      quote_literal(p_thread_id), quote_literal(v_recorded.model_id), p_dimensions, quote_literal(p_model_id)
      using errcode = 'PM018';
  end if;
  if p_share_parent_thread_id is not null then  -- a plain recall skips the grants' query
    for v_recorded in
      select g.resource_id, g.parent_thread_id as thread_id, g.source_ids, m.model_id
      from {{share_grant}} g
      join {{embedding_model}} m
        on m.tenant_id = p_tenant_id and m.resource_id = g.resource_id and m.thread_id = g.parent_thread_id
      where g.tenant_id = p_tenant_id and g.child_resource_id = p_resource_id
        and g.child_thread_id = p_thread_id and g.parent_thread_id = p_share_parent_thread_id
        and (g.expires_at is null or g.expires_at > v_clock)
        and m.dimensions = p_dimensions and m.model_id <> p_model_id
      order by g.resource_id collate "C"
    loop
      if exists (select 1 from {{entries}} e
                 where e.tenant_id = p_tenant_id and e.resource_id = v_recorded.resource_id
                   and e.thread_id = v_recorded.thread_id and e.id = any(v_recorded.source_ids)) then
        raise exception 'the parent thread % (resource %) holds entries embedded with model % (% dimensions), not %',
          quote_literal(v_recorded.thread_id), quote_literal(v_recorded.resource_id),
          quote_literal(v_recorded.model_id), p_dimensions, quote_literal(p_model_id)
          using errcode = 'PM018';
      end if;
    end loop;
  end if;
  return query
    select * from recall_v2(p_tenant_id, p_resource_id, p_thread_id, p_query_embedding, p_query_text, p_top_k,
                            p_message_range, p_require_consent, p_share_parent_thread_id, p_now,
                            p_recency_weight, p_importance_weight, p_half_life_ms, p_explain);
end;
$$;
-- end of functions/recall_guarded_v1.sql

-- file functions/use_embedding_model_v1.sql
-- API function (prism_memory/operations.py, a guard): it runs as the schema
-- owner (security definer), like every API function.
--
-- The embedding-model guard of a write. Call it in the same transaction as,
-- and before, the write it guards (remember_v1, remember_batch_v1, correct_v2,
-- reembed_v1): it takes the lock of each thread named (lock_thread_v1, in
-- lock-key order, as remember_batch_v1 does), so the record it checks cannot
-- change before the write commits. The threads are p_resource_ids[i] /
-- p_thread_ids[i] (parallel, one-dimensional, at most 10,000; a thread may
-- repeat). For each thread, in (resource_id, thread_id) code-point order:
--   1. the width rule first (assert_dimensions_v1: the pinned width, else
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
  perform assert_scope_v1(p_tenant_id, g.resource_id, g.thread_id, true)
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
    perform assert_dimensions_v1(p_tenant_id, v_thread.resource_id, v_thread.thread_id, p_dimensions);
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
-- end of functions/use_embedding_model_v1.sql

revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
