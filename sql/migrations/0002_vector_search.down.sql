-- Reverts revision 0002's vector search part: the entries' HNSW index of 0001 comes back.
drop index if exists {{schema}}.{{rag_chunk_hnsw_idx}};
create index {{entries_hnsw_idx}} on {{entries}} using hnsw (embedding vector_cosine_ops);
