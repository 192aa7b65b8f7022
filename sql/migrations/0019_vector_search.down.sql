-- Reverts revision 0019's vector search part: the RAG graph over the full-precision embeddings.
drop index if exists {{schema}}.{{rag_chunk_hnsw_idx}};
create index {{rag_chunk_hnsw_idx}} on {{rag_chunk}} using hnsw (embedding vector_cosine_ops);
