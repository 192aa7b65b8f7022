-- Reverts revision 0011.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
drop function {{schema}}.recall_guarded_v1(text, text, text, text, integer, vector, text, integer, integer, boolean, text, timestamptz, double precision, double precision, double precision, boolean);
drop function {{schema}}.use_embedding_model_v1(text, text[], text[], text, integer, boolean);
drop function {{schema}}.assert_embedding_model_v1(text, integer);
drop table {{embedding_model}};

reset search_path;
