-- prism-memory schema revision 0012, vector search part: rendered only when the
-- embedding dimension is pinned (at most 2000, pgvector's HNSW limit for vector).
-- Recall across the threads of a large resource reads the entries that may leave
-- their thread (leaves_thread_v1) through an HNSW index of their own: a partial
-- index, so writes of entries that stay in their thread (the default, and every
-- legacy entry) pay nothing for it. A denser graph than pgvector's default
-- (m 16, ef_construction 64): tight clusters of recurring topics were missed.
create index {{entries_travel_hnsw_idx}} on {{entries}} using hnsw (embedding vector_cosine_ops)
  with (m = 24, ef_construction = 128) where coalesce(consent_scope in ('profile', 'user'), false);
