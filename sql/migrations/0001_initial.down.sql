-- Reverts revision 0001. The schema itself stays: it holds alembic_version.
drop function if exists {{schema}}.recall_v1(text, text, text, vector, text, integer, integer);
drop function if exists {{schema}}.remember_v1(text, text, text, text[], text[], vector[], jsonb[], bigint[], double precision[]);
drop function if exists {{schema}}.update_working_v1(text, text, text, jsonb, bigint);
drop function if exists {{schema}}.get_working_v1(text, text, text);
drop function if exists {{schema}}.assert_dimensions_v1(text, text, text, integer);
drop function if exists {{schema}}.assert_embedding_v1(vector, text);
drop function if exists {{schema}}.assert_scope_v1(text, text, text, boolean);
drop function if exists {{schema}}.is_blank_v1(text);
drop function if exists {{schema}}.install_info_v1();
drop table if exists {{rag_scope_generations}};
drop table if exists {{rag_source_acl}};
drop table if exists {{share_grant}};
drop table if exists {{invalidation}};
drop table if exists {{entries}};
drop table if exists {{working}};
drop function if exists {{schema}}.lexical_terms_v1(text);
