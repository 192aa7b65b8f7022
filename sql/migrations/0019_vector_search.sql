-- prism-memory schema revision 0019, vector search part: rendered only when the
-- embedding dimension is pinned (at most 2000). The RAG graph is rebuilt over
-- half-precision copies of the embeddings: an upsert's HNSW insert, nine
-- tenths of its cost, computes distances over half the bytes and writes half
-- the index; rag_query_v1 orders by the same expression and re-scores the
-- chunks it finds in full precision.
drop index if exists {{schema}}.{{rag_chunk_hnsw_idx}};
create index {{rag_chunk_hnsw_idx}} on {{rag_chunk}}
  using hnsw ((embedding::halfvec({{dimensions}})) halfvec_cosine_ops);
