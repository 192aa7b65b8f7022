-- prism-memory: the whole database at head, in install order. This is the
-- readable source of truth: each function's live definition is in
-- functions/<name>.sql (found by its name), with its attributes (SECURITY
-- DEFINER, search_path, volatility, plan settings) written in the CREATE
-- statement; tables.sql holds every table, index and policy.
--
-- prism_memory.schema.build_memory_ddl() renders this file: each "\ir" line
-- is replaced by the file it names, and every placeholder in double braces by a validated,
-- quoted identifier or literal (prism_memory.schema.SchemaConfig.names).
-- Schema revisions (sql/migrations) bring an existing database here; the
-- tests install a database from this file, migrate another through the whole
-- chain, and diff their catalogs (tests/schema/test_schema_source.py).

create extension if not exists vector;
-- Loads pgvector's library in this session (an extension created earlier, by
-- another session, is not loaded yet): rag_query_v1's SET clauses name its
-- hnsw.* settings, which only a superuser may name before the library is loaded.
select '[1]'::vector(1);
create schema if not exists {{schema}};

-- Every function below that is parsed when it runs (PL/pgSQL, and SQL with a
-- string body) is created with "set search_path from current", which this
-- pins to: pg_catalog first (built-ins cannot be shadowed), this install's
-- schema, pgvector's schema, and the caller's temporary objects last.
{{pin_search_path}}

-- The tokenizer first: the entries' and chunks' generated text_tsv column calls
-- lexical_terms_v2, which stems with the dictionary text_search.sql creates.
-- (lexical_terms_v1, text_tsv's tokenizer before revision 0010, stays: the hash
-- embedder's features, prism_memory/lexical.py, are its terms.)
\ir text_search.sql
\ir functions/lexical_terms_v1.sql
\ir functions/lexical_cjk_tokens_v2.sql
\ir functions/lexical_tokens_v2.sql
\ir functions/lexical_terms_v2.sql
\ir tables.sql
\ir functions.sql

-- Nobody but the owner may execute a function of the schema but
-- install_info_v1 (PostgreSQL grants EXECUTE to PUBLIC otherwise);
-- prism_memory.schema.grant_app_role() grants the API functions to an
-- application role.
revoke execute on all functions in schema {{schema}} from public;
grant execute on function {{schema}}.install_info_v1() to public;
reset search_path;
