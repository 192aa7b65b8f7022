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
