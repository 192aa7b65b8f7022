-- Reverts revision 0010's vector search part.
drop index if exists {{schema}}.{{entries_travel_hnsw_idx}};
