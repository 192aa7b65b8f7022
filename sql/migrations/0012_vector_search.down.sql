-- Reverts revision 0012's vector search part.
drop index if exists {{schema}}.{{entries_travel_hnsw_idx}};
