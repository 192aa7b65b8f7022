-- Reverts revision 0010.

{{pin_search_path}}

\ir ../schema/functions/install_info_v1.sql
drop function {{schema}}.check_embedding_model_v1(text, text, text, text, integer, text, timestamptz);
drop function {{schema}}.use_embedding_model_v1(text, text[], text[], text, integer, boolean);
drop table {{embedding_model}};

reset search_path;
