-- prism-memory at head, vector search part: rendered only when the embedding
-- dimension is pinned to at most 2000 (pgvector builds HNSW over vector(N) up
-- to 2,000 dimensions). Scoped memory recall never needs it (it reads one
-- thread exactly through the scope index); RAG queries over large scopes do.
-- The RAG graph holds the embeddings as half-precision copies: an insert
-- (the cost of a RAG upsert) computes half as many bytes of distances and
-- writes half the index; rag_query_v1 orders by the same expression and
-- re-scores the chunks it finds in full precision.
create index {{rag_chunk_hnsw_idx}} on {{rag_chunk}}
  using hnsw ((embedding::halfvec({{dimensions}})) halfvec_cosine_ops);
-- Recall across the threads of a large resource (recall_v3): the travellers only
-- (leaves_thread_v1), so writes of entries that stay in their thread pay nothing.
-- A denser graph than pgvector's default (m 16, ef_construction 64): topics
-- that recur over many threads form tight clusters, which the default graph
-- joined too sparsely to find from far away (bench/scale.py measured recall).
create index {{entries_travel_hnsw_idx}} on {{entries}} using hnsw (embedding vector_cosine_ops)
  with (m = 24, ef_construction = 128) where coalesce(consent_scope in ('profile', 'user'), false);
