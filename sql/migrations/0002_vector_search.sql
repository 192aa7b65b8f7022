-- prism-memory schema revision 0002, vector search part: rendered only when the
-- embedding dimension is pinned (at most 2000, pgvector's HNSW limit for vector).
-- The HNSW index moves from the entries to the RAG chunks: scoped memory recall
-- always reads one thread exactly through the scope index, so an HNSW index
-- over every entry only slowed writes down; RAG queries over large scopes use it.
drop index if exists {{schema}}.{{entries_hnsw_idx}};
create index {{rag_chunk_hnsw_idx}} on {{rag_chunk}} using hnsw (embedding vector_cosine_ops);
