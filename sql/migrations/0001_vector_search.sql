-- prism-memory schema revision 0001, vector search part: rendered only when the
-- embedding dimension is pinned, because pgvector builds HNSW only over vector(N).
-- Scoped recall never needs it (it scans the scope index exactly); it serves
-- large unscoped and RAG queries.
create index {{entries_hnsw_idx}} on {{entries}} using hnsw (embedding vector_cosine_ops);
