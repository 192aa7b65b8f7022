-- prism-memory at head, vector search part: rendered only when the embedding
-- dimension is pinned to at most 2000 (pgvector builds HNSW over vector(N) up
-- to 2,000 dimensions). Scoped memory recall never needs it (it reads one
-- thread exactly through the scope index); RAG queries over large scopes do.
create index {{rag_chunk_hnsw_idx}} on {{rag_chunk}} using hnsw (embedding vector_cosine_ops);
-- Recall across the threads of a large resource (recall_v3): the travellers only
-- (leaves_thread_v1), so writes of entries that stay in their thread pay nothing.
-- A denser graph than pgvector's default (m 16, ef_construction 64): topics
-- that recur over many threads form tight clusters, which the default graph
-- joined too sparsely to find from far away (bench/scale.py measured recall).
create index {{entries_travel_hnsw_idx}} on {{entries}} using hnsw (embedding vector_cosine_ops)
  with (m = 24, ef_construction = 128) where coalesce(consent_scope in ('profile', 'user'), false);
