"""Alembic environment for prism-memory.

The target schema, table and dimension come from ``config.attributes``
(``prism_memory.schema.alembic_config``). The version table lives in the target
schema, and an advisory lock serialises concurrent migrators of one database.
"""

from alembic import context
from prism_memory import citus
from prism_memory.schema import sqlalchemy_url
from prism_memory.schema_config import SchemaConfig, installed_revision, quote_identifier
from sqlalchemy import create_engine, pool, text

config = context.config

schema_config: SchemaConfig = config.attributes["schema_config"]

#: Loads pgvector's shared library in this session when the extension exists (a fresh database has
#: none yet: revision 0001 creates it, which loads the library).
_LOAD_PGVECTOR = """
do $$
declare
  v_schema name := (select n.nspname from pg_catalog.pg_extension x
                    join pg_catalog.pg_namespace n on n.oid = x.extnamespace where x.extname = 'vector');
begin
  if v_schema is not null then
    execute pg_catalog.format('select %L::%I.vector(1)', '[1]', v_schema);
  end if;
end;
$$
"""


def run_migrations_online() -> None:
    engine = create_engine(sqlalchemy_url(config.attributes["dsn"]), poolclass=pool.NullPool)
    with engine.connect() as connection:
        with connection.begin():
            # One migration at a time per database: installs into different schemas still
            # share "create extension vector".
            connection.execute(text("select pg_advisory_xact_lock(hashtextextended('prism_memory.migrate', 0))"))
            # Load pgvector's library, so that functions whose SET clauses name its settings
            # (hnsw.*) can be created by an owner who is not a superuser.
            connection.execute(text(_LOAD_PGVECTOR))
            connection.execute(text(f"create schema if not exists {quote_identifier(schema_config.schema)}"))
            # On a Citus coordinator, an install not yet distributed stays local while it migrates
            # (Citus would propagate each function at once, and refuses some function DDL for
            # propagated ones); citus.distribute() sends everything to the workers afterwards. A
            # distributed install migrates with propagation on, so its shards follow every change.
            raw = connection.connection.driver_connection
            distributed = citus.is_distributed(raw, schema_config)
            before = installed_revision(raw, schema_config.schema)
            if citus.has_citus(raw) and not distributed:
                connection.execute(text("set local citus.enable_ddl_propagation = off"))
            context.configure(
                connection=connection,
                version_table="alembic_version",
                version_table_schema=schema_config.schema,
                transactional_ddl=True,
            )
            context.run_migrations(schema_config=schema_config)
            migrated = installed_revision(raw, schema_config.schema) != before
    engine.dispose()
    if distributed and migrated:
        # A migration may drop and re-create functions: each loses its delegation.
        citus.distribute(config.attributes["dsn"], schema_config)


if context.is_offline_mode():
    raise RuntimeError("prism-memory renders offline DDL with build_memory_ddl(); use it instead of --sql")
run_migrations_online()
