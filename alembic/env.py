"""Alembic environment for prism-memory.

The target schema, table and dimension come from ``config.attributes``
(``prism_memory.schema.alembic_config``). The version table lives in the target
schema, and an advisory lock serialises concurrent migrators.
"""

from alembic import context
from prism_memory.schema import SchemaConfig, quote_identifier, sqlalchemy_url
from sqlalchemy import create_engine, pool, text

config = context.config
schema_config: SchemaConfig = config.attributes["schema_config"]


def run_migrations_online() -> None:
    engine = create_engine(sqlalchemy_url(config.attributes["dsn"]), poolclass=pool.NullPool)
    with engine.connect() as connection:
        with connection.begin():
            connection.execute(
                text("select pg_advisory_xact_lock(hashtextextended(:key, 0))"),
                {"key": "prism_memory.migrate:" + schema_config.schema},
            )
            connection.execute(text(f"create schema if not exists {quote_identifier(schema_config.schema)}"))
            context.configure(
                connection=connection,
                version_table="alembic_version",
                version_table_schema=schema_config.schema,
                transactional_ddl=True,
            )
            context.run_migrations(schema_config=schema_config)
    engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("prism-memory renders offline DDL with build_memory_ddl(); use it instead of --sql")
run_migrations_online()
