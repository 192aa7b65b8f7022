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

\ir ../schema/functions/install_info_v1.sql
\ir ../schema/functions/assert_embedding_model_v1.sql
\ir ../schema/functions/recall_guarded_v1.sql
\ir ../schema/functions/use_embedding_model_v1.sql
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;

reset search_path;
