-- prism-memory schema revision 0001: tables, indexes and the v1 API functions.
--
-- This file is a template rendered by prism_memory.schema.render(); every placeholder
-- in double braces is replaced by a validated, quoted identifier or a literal. It is frozen once
-- released: later changes go into a new revision file, never into this one.
--
-- Rules (../shared/DESIGN.md): tenant_id leads every primary key and unique
-- index, every API function takes the tenant first and touches one tenant, and
-- every function the Python calls carries a _vN suffix.

create extension if not exists vector;
create schema if not exists {{schema}};

-- Functions below are created with "set search_path from current": this
-- install's schema, the schema holding pgvector, then pg_catalog. Callers'
-- own search_path never changes what a function resolves. Reset at the end.
select pg_catalog.set_config(
  'search_path',
  pg_catalog.format('%I, %I, pg_catalog', {{schema_literal}},
    (select n.nspname from pg_catalog.pg_extension x
     join pg_catalog.pg_namespace n on n.oid = x.extnamespace
     where x.extname = 'vector')),
  false);

-- Lexical terms: the one tokenizer for text_tsv, the lexical leg of recall and
-- the emulator (prism_memory/lexical.py mirrors it exactly). Lower-cases ASCII
-- only (collation "C"), splits on everything but ASCII letters/digits and
-- code points from U+00C0 up (minus the General Punctuation and CJK
-- punctuation blocks), drops stopwords and terms over 64 characters, reads at
-- most the first 200,000 characters (so a tsvector stays far below 1 MB), and
-- returns the distinct terms in code-point order.
create function {{schema}}.lexical_terms_v1(p_text text) returns text[]
language sql immutable strict parallel safe
return (
  select coalesce(array_agg(distinct term order by term), '{}'::text[])
  from regexp_split_to_table(
         lower(left(p_text, 200000) collate "C"),
         '[^a-z0-9\u00c0-\u1fff\u2070-\u2fff\u3040-\U0010ffff]+') as term
  where term <> ''
    and char_length(term) <= 64
    and term <> all ({{stopwords}}::text[])
);

-- Working memory: one versioned JSON document per tenant/resource, or per
-- tenant/resource/thread. thread_id = '' is the resource-scoped record.
create table {{working}} (
  tenant_id   text        not null,
  resource_id text        not null,
  thread_id   text        not null default '',
  data        jsonb       not null,
  version     bigint      not null check (version >= 1),
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now(),
  primary key (tenant_id, resource_id, thread_id)
);

-- Semantic memory entries.
create table {{entries}} (
  tenant_id          text        not null,
  resource_id        text        not null,
  thread_id          text        not null,
  id                 text        not null,
  text               text        not null,
  metadata           jsonb       not null default '{}'::jsonb,
  embedding          {{embedding_type}} not null,
  sequence           bigint      not null,
  importance         double precision check (importance between 0 and 1),
  consent_source     text        check (consent_source in ('user', 'agent', 'system')),
  consent_scope      text        check (consent_scope in ('thread', 'profile', 'user')),
  consent_visible    boolean     not null default true,
  consent_granted_at timestamptz,
  consent_revoked_at timestamptz,
  legal_hold         boolean     not null default false,
  created_at         timestamptz not null default now(),
  updated_at         timestamptz not null default now(),
  text_tsv           tsvector    generated always as
                       (array_to_tsvector({{schema}}.lexical_terms_v1(text))) stored,
  primary key (tenant_id, resource_id, thread_id, id)
);
alter table {{entries}} alter column embedding set storage {{embedding_storage}};

-- Scoped recall and adjacency: an exact scan of one thread in sequence order.
create index {{entries_scope_idx}} on {{entries}} (tenant_id, resource_id, thread_id, sequence);
create index {{entries_tsv_idx}} on {{entries}} using gin (text_tsv);
create index {{entries_lineage_idx}} on {{entries}} using gin ((metadata -> '_lineage' -> 'sourceIds'));

-- Tombstones: recall excludes an entry with an indexed NOT EXISTS on this key.
create table {{invalidation}} (
  tenant_id       text        not null,
  resource_id     text        not null,
  thread_id       text        not null,
  entry_id        text        not null,
  reason          text        not null,
  source_entry_id text,
  created_at      timestamptz not null default now(),
  primary key (tenant_id, resource_id, thread_id, entry_id)
);

-- Parent-to-child thread share grants (allow-lists with an expiry).
create table {{share_grant}} (
  tenant_id        text        not null,
  resource_id      text        not null,
  parent_thread_id text        not null,
  child_thread_id  text        not null,
  source_ids       text[]      not null,
  expires_at       timestamptz,
  created_at       timestamptz not null default now(),
  primary key (tenant_id, resource_id, parent_thread_id, child_thread_id)
);

-- RAG document ACL: grants of a source to a principal or a group.
create table {{rag_source_acl}} (
  tenant_id      text        not null,
  source_id      text        not null,
  grantee_kind   text        not null check (grantee_kind in ('principal', 'group')),
  grantee_id     text        not null,
  access_version bigint      not null,
  created_at     timestamptz not null default now(),
  primary key (tenant_id, source_id, grantee_kind, grantee_id)
);
create index {{rag_source_acl_grantee_idx}} on {{rag_source_acl}} (tenant_id, grantee_kind, grantee_id, source_id);

-- RAG per-scope generation pointer.
create table {{rag_scope_generations}} (
  tenant_id  text        not null,
  scope      text        not null,
  generation bigint      not null,
  updated_at timestamptz not null default now(),
  primary key (tenant_id, scope)
);

-- What this install is: checked by the Python caller before any other call.
create function {{schema}}.install_info_v1()
returns table (schema_version integer, table_name text, dimensions integer, vector_schema text)
language sql stable
as $$
  select 1, {{table_literal}}::text, {{dimensions}}::integer, n.nspname::text
  from pg_catalog.pg_extension x join pg_catalog.pg_namespace n on n.oid = x.extnamespace
  where x.extname = 'vector'
$$;

-- True when p_text is empty or holds only whitespace: exactly the characters
-- Python's str.isspace() accepts, so the emulator's check is the same.
create function {{schema}}.is_blank_v1(p_text text) returns boolean
language sql immutable strict parallel safe
return p_text ~ '^[\t\n\x0b\f\r\x1c-\x1f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$';

-- Raises PM001 unless tenant, resource (and thread, when required) are
-- non-blank strings of at most 256 bytes.
create function {{schema}}.assert_scope_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_thread_required boolean)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_tenant_id is null or is_blank_v1(p_tenant_id) or octet_length(p_tenant_id) > 256 then
    raise exception 'tenant_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if p_resource_id is null or is_blank_v1(p_resource_id) or octet_length(p_resource_id) > 256 then
    raise exception 'resource_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
  if (p_thread_required or p_thread_id is not null)
     and (p_thread_id is null or is_blank_v1(p_thread_id) or octet_length(p_thread_id) > 256) then
    raise exception 'thread_id must be a non-blank string of at most 256 bytes' using errcode = 'PM001';
  end if;
end;
$$;

-- Raises PM003 unless the embedding's L2 norm is within [1e-15, 1e15]:
-- pgvector sums squares in float32, so a larger vector overflows and a
-- smaller one underflows, and either would score NaN.
create function {{schema}}.assert_embedding_v1(p_embedding vector, p_label text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_embedding is null or not (vector_norm(p_embedding) between 1e-15 and 1e15) then
    raise exception '% must have an L2 norm between 1e-15 and 1e15 (not zero)', p_label
      using errcode = 'PM003';
  end if;
end;
$$;

-- Raises PM004 when an embedding's width differs from the install's pinned
-- dimension, or (unpinned) from the entries already stored in the thread.
create function {{schema}}.assert_dimensions_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_dimensions integer)
returns void
language plpgsql stable
set search_path from current
as $$
declare
  v_expected integer := {{dimensions}};
begin
  if v_expected is null then
    select vector_dims(e.embedding) into v_expected
    from {{entries}} e
    where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id
    limit 1;
  end if;
  if v_expected is not null and p_dimensions <> v_expected then
    raise exception 'embedding has % dimensions, expected %', p_dimensions, v_expected
      using errcode = 'PM004';
  end if;
end;
$$;

create function {{schema}}.get_working_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text default null)
returns table (data jsonb, version bigint, created_at timestamptz, updated_at timestamptz)
language plpgsql stable
set search_path from current
as $$
begin
  perform {{schema}}.assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, false);
  return query
    select w.data, w.version, w.created_at, w.updated_at
    from {{working}} w
    where w.tenant_id = p_tenant_id and w.resource_id = p_resource_id
      and w.thread_id = coalesce(p_thread_id, '');
end;
$$;

-- Replaces the working-memory document and increments its version (1 for a
-- new record). With p_expected_version set, the current version (0 when there
-- is no record) must equal it, else PM009 and nothing changes.
create function {{schema}}.update_working_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text, p_data jsonb,
  p_expected_version bigint default null)
returns table (data jsonb, version bigint, created_at timestamptz, updated_at timestamptz)
language plpgsql volatile
set search_path from current
as $$
declare
  v_current bigint;
begin
  perform {{schema}}.assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, false);
  if p_data is null or jsonb_typeof(p_data) <> 'object' then
    raise exception 'working memory must be a JSON object' using errcode = 'PM007';
  end if;
  if pg_column_size(p_data) > 8388608 then
    raise exception 'working memory is % bytes, over the 8 MiB hard cap of the SQL function',
      pg_column_size(p_data) using errcode = 'PM006';
  end if;
  if p_expected_version < 0 then
    raise exception 'expected_version must be >= 0, got %', p_expected_version using errcode = 'PM005';
  end if;
  select w.version into v_current
  from {{working}} w
  where w.tenant_id = p_tenant_id and w.resource_id = p_resource_id
    and w.thread_id = coalesce(p_thread_id, '')
  for update;
  v_current := coalesce(v_current, 0);
  if p_expected_version is not null and p_expected_version <> v_current then
    raise exception 'working memory is at version %, expected %', v_current, p_expected_version
      using errcode = 'PM009';
  end if;
  return query
    insert into {{working}} as w (tenant_id, resource_id, thread_id, data, version)
    values (p_tenant_id, p_resource_id, coalesce(p_thread_id, ''), p_data, 1)
    on conflict (tenant_id, resource_id, thread_id) do update
      set data = excluded.data, version = w.version + 1, updated_at = now()
      where p_expected_version is null or w.version = v_current
    returning w.data, w.version, w.created_at, w.updated_at;
  if not found then
    -- With an expected version: a concurrent writer created the record first.
    raise exception 'working memory changed concurrently (expected version %)', v_current
      using errcode = 'PM009';
  end if;
end;
$$;

-- Upserts a batch of entries into one thread, all or nothing. Arrays are
-- parallel (one element per entry); p_metadata, p_sequences and p_importance
-- may be null. A missing sequence keeps the stored entry's sequence, or for a
-- new entry takes (max sequence in the thread) + (position in the batch).
-- Importance is clamped to [0, 1]. Returns the number of entries written.
create function {{schema}}.remember_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_ids text[], p_texts text[], p_embeddings vector[],
  p_metadata jsonb[] default null, p_sequences bigint[] default null,
  p_importance double precision[] default null)
returns integer
language plpgsql volatile
set search_path from current
as $$
declare
  v_count integer := coalesce(cardinality(p_ids), 0);
  v_max_sequence bigint;
  v_problem text;
  v_dimensions integer;
begin
  perform {{schema}}.assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if v_count = 0 then
    return 0;
  end if;
  if coalesce(cardinality(p_texts), 0) <> v_count
     or coalesce(cardinality(p_embeddings), 0) <> v_count
     or coalesce(cardinality(p_metadata), v_count) <> v_count
     or coalesce(cardinality(p_sequences), v_count) <> v_count
     or coalesce(cardinality(p_importance), v_count) <> v_count then
    raise exception 'remember_v1: the argument arrays differ in length' using errcode = 'PM002';
  end if;

  select case
           when e.id is null or is_blank_v1(e.id) or octet_length(e.id) > 512
             then format('entry %s: id must be a non-blank string of at most 512 bytes', e.ord)
           when e.text is null or is_blank_v1(e.text)
             then format('entry %s (%s): text must not be blank', e.ord, e.id)
           when e.metadata is not null and jsonb_typeof(e.metadata) <> 'object'
             then format('entry %s (%s): metadata must be a JSON object', e.ord, e.id)
           when e.importance in ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)
             then format('entry %s (%s): importance must be finite', e.ord, e.id)
           when e.sequence not between 0 and 9007199254740991
             then format('entry %s (%s): sequence must be between 0 and 2^53 - 1', e.ord, e.id)
           when e.embedding is null
             then format('entry %s (%s): embedding is missing', e.ord, e.id)
         end
  into v_problem
  from unnest(p_ids, p_texts, p_metadata, p_importance, p_embeddings, p_sequences)
         with ordinality as e(id, text, metadata, importance, embedding, sequence, ord)
  where e.id is null or is_blank_v1(e.id) or octet_length(e.id) > 512
     or e.text is null or is_blank_v1(e.text)
     or (e.metadata is not null and jsonb_typeof(e.metadata) <> 'object')
     or e.importance in ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)
     or e.sequence not between 0 and 9007199254740991
     or e.embedding is null
  order by e.ord
  limit 1;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'PM002';
  end if;
  if (select count(distinct id) from unnest(p_ids) as id) <> v_count then
    raise exception 'remember_v1: an entry id appears twice in the batch' using errcode = 'PM002';
  end if;
  if (select max(octet_length(t) + coalesce(pg_column_size(m), 0))
      from unnest(p_texts, p_metadata) as x(t, m)) > 67108864 then
    raise exception 'an entry is over the 64 MiB hard cap of the SQL function on text plus metadata'
      using errcode = 'PM006';
  end if;
  perform assert_embedding_v1(v, 'an embedding') from unnest(p_embeddings) as v;
  if (select count(distinct vector_dims(v)) from unnest(p_embeddings) as v) > 1 then
    raise exception 'the embeddings in one batch differ in dimensions' using errcode = 'PM004';
  end if;

  -- Serialise writers of one thread: automatic sequences never interleave, and
  -- an unpinned thread's first width is fixed before a second writer checks it.
  perform pg_advisory_xact_lock(
    hashtextextended(p_tenant_id || chr(31) || p_resource_id || chr(31) || p_thread_id, 0));
  v_dimensions := vector_dims(p_embeddings[1]);
  perform assert_dimensions_v1(p_tenant_id, p_resource_id, p_thread_id, v_dimensions);
  select coalesce(max(e.sequence), 0) into v_max_sequence
  from {{entries}} e
  where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id and e.thread_id = p_thread_id;

  insert into {{entries}} as t
    (tenant_id, resource_id, thread_id, id, text, metadata, embedding, sequence, importance)
  select p_tenant_id, p_resource_id, p_thread_id, e.id, e.text,
         coalesce(e.metadata, '{}'::jsonb), e.embedding,
         coalesce(e.sequence, s.sequence, v_max_sequence + e.ord),
         case when e.importance is null then null
              else greatest(0::float8, least(1::float8, e.importance)) end
  from unnest(p_ids, p_texts, p_embeddings, p_metadata, p_sequences, p_importance)
         with ordinality as e(id, text, embedding, metadata, sequence, importance, ord)
  left join {{entries}} s
    on s.tenant_id = p_tenant_id and s.resource_id = p_resource_id
   and s.thread_id = p_thread_id and s.id = e.id
  on conflict (tenant_id, resource_id, thread_id, id) do update
    set text = excluded.text, metadata = excluded.metadata, embedding = excluded.embedding,
        sequence = excluded.sequence, importance = excluded.importance, updated_at = now();
  return v_count;
end;
$$;

-- Semantic recall over one thread: an exact scan on the scope index.
--   similarity = 1 - cosine distance (pgvector <=>), in [-1, 1]
--   lexical    = share of the query's distinct lexical terms found in the entry, in [0, 1]
--   score      = similarity + 0.25 * lexical
-- Hits (kind 'hit', rank 1..top_k) are ordered by score desc, sequence asc,
-- id asc (code-point order); then come the entries within p_message_range
-- sequences of any hit (kind 'adjacent', ordered by sequence, id), with no
-- scores.
create function {{schema}}.recall_v1(
  p_tenant_id text, p_resource_id text, p_thread_id text,
  p_query_embedding vector, p_query_text text default '',
  p_top_k integer default 8, p_message_range integer default 0)
returns table (kind text, rank integer, id text, text text, metadata jsonb, sequence bigint,
               importance double precision, similarity double precision,
               lexical double precision, score double precision,
               created_at timestamptz, updated_at timestamptz)
language plpgsql stable
set search_path from current
as $$
declare
  v_terms text[] := {{schema}}.lexical_terms_v1(coalesce(p_query_text, ''));
  v_term_count integer := cardinality(v_terms);
  -- Any-term query: terms hold no quote or backslash, so quote_literal is a safe operand.
  v_any_term tsquery := (select string_agg(quote_literal(term), ' | ')::tsquery from unnest(v_terms) as term);
begin
  perform {{schema}}.assert_scope_v1(p_tenant_id, p_resource_id, p_thread_id, true);
  if p_top_k is null or p_top_k < 1 or p_top_k > 32 then
    raise exception 'top_k must be between 1 and 32, got %', p_top_k using errcode = 'PM005';
  end if;
  if p_message_range is null or p_message_range < 0 or p_message_range > 4 then
    raise exception 'message_range must be between 0 and 4, got %', p_message_range
      using errcode = 'PM005';
  end if;
  if octet_length(p_query_text) > 65536 then
    raise exception 'the query text is % bytes, over the 64 KiB hard cap', octet_length(p_query_text)
      using errcode = 'PM006';
  end if;
  perform assert_embedding_v1(p_query_embedding, 'the query embedding');
  perform {{schema}}.assert_dimensions_v1(
    p_tenant_id, p_resource_id, p_thread_id, vector_dims(p_query_embedding));

  return query
    with scored as (
      -- Narrow rows only (no text or metadata); "offset 0" keeps each distance computed once.
      select e.id, e.sequence,
             1::float8 - (e.embedding <=> p_query_embedding) as similarity,
             case when v_term_count = 0 or not (e.text_tsv @@ v_any_term) then 0::float8
                  else (length(e.text_tsv) - length(ts_delete(e.text_tsv, v_terms)))::float8 / v_term_count
             end as lexical
      from {{entries}} e
      where e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
        and e.thread_id = p_thread_id
      offset 0
    ), hits as (
      select s.id, s.sequence, s.similarity, s.lexical, s.similarity + 0.25::float8 * s.lexical as score
      from scored s
      order by score desc, s.sequence asc, s.id collate "C" asc
      limit p_top_k
    ), adjacent as (
      select distinct e.id, e.sequence
      from hits h
      join {{entries}} e
        on e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
       and e.thread_id = p_thread_id
       and e.sequence between h.sequence - p_message_range and h.sequence + p_message_range
      where p_message_range > 0
        and not exists (select 1 from hits r where r.id = e.id)
    ), picked as (
      select 'hit'::text as kind,
             (row_number() over (order by h.score desc, h.sequence asc, h.id collate "C" asc))::integer as rank,
             h.id, h.similarity, h.lexical, h.score
      from hits h
      union all
      select 'adjacent'::text, (row_number() over (order by a.sequence, a.id collate "C"))::integer,
             a.id, null::float8, null::float8, null::float8
      from adjacent a
    )
    select p.kind, p.rank, e.id, e.text, e.metadata, e.sequence, e.importance,
           p.similarity, p.lexical, p.score, e.created_at, e.updated_at
    from picked p
    join {{entries}} e
      on e.tenant_id = p_tenant_id and e.resource_id = p_resource_id
     and e.thread_id = p_thread_id and e.id = p.id
    order by p.kind desc, p.rank;
end;
$$;

reset search_path;
