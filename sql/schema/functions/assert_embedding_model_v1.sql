-- Raises PM017 unless p_model_id is a non-blank string of at most 256 bytes
-- and p_dimensions a width in 1..16000: the embedder identity the guard
-- takes (use_embedding_model_v1, recall_v3's p_model_id), as
-- prism_memory.checks.check_model checks it.
create or replace function {{schema}}.assert_embedding_model_v1(p_model_id text, p_dimensions integer)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  perform assert_id_v1(p_model_id, 'the embedding model id', 256, 'PM017');
  if p_dimensions is null or p_dimensions not between 1 and 16000 then
    raise exception 'the embedding model''s width must be between 1 and 16000, got %', p_dimensions
      using errcode = 'PM017';
  end if;
end;
$$;
