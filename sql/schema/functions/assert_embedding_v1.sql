-- Raises PM003 unless the embedding's L2 norm is within [1e-15, 1e15]:
-- pgvector sums squares in float32, so a larger vector overflows and a
-- smaller one underflows, and either would score NaN.
create or replace function {{schema}}.assert_embedding_v1(p_embedding vector, p_label text)
returns void
language plpgsql immutable
set search_path from current
as $$
begin
  if p_embedding is null or not (vector_norm(p_embedding) between 1e-15 and 1e15) then
    raise exception '% must have an L2 norm between 1e-15 and 1e15 (not zero)', p_label
      using errcode = 'PM003';
  end if;
end;
$$;
