-- prism-memory at head, vector search part: rendered only when the embedding
-- dimension is pinned to at most 2000 (pgvector builds HNSW over vector(N) up
-- to 2,000 dimensions). Scoped memory recall never needs it (it reads one
-- thread exactly through the scope index); RAG queries over large scopes do.
create index {{rag_chunk_hnsw_idx}} on {{rag_chunk}} using hnsw (embedding vector_cosine_ops);
