"""DDL rendering, migrations and application roles.

The SQL lives in ``sql/`` (shipped as package data): ``sql/schema`` is the
database at head, one file per function, and ``sql/migrations`` the schema
revisions Alembic applies (``prism_memory.sql_source`` reads both). Each file
is a template whose ``{{name}}`` placeholders are filled with the validated,
double-quoted identifiers of a :class:`~prism_memory.schema_config.SchemaConfig`,
so a schema or table name is never interpolated raw. :func:`build_memory_ddl`
and :func:`build_vector_search_ddl` render the head for hosts who migrate by
hand; a test proves it equals the migrated chain.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from . import citus, sql_source
from .errors import ConfigurationError, InvalidIdentifierError, InvalidScopeError
from .operations import API_FUNCTIONS
from .schema_config import (
    DEFAULT_SCHEMA,
    DEFAULT_TABLE,
    REVISIONS,
    SCHEMA_VERSION,
    SchemaConfig,
    quote_identifier,
    validate_identifier,
)

#: Widest pinned embedding that gets an HNSW index (pgvector indexes ``vector`` up to 2,000 dimensions).
HNSW_MAX_DIMENSIONS = 2000

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def render(template: str, config: SchemaConfig, schema_version: int = SCHEMA_VERSION) -> str:
    """Fill a SQL template's ``{{name}}`` placeholders; raises ``KeyError`` on an unknown one.

    ``{{schema_version}}`` is the revision the rendered SQL brings the
    database to (``install_info_v1`` reports it).
    """
    names = {**config.names, "schema_version": str(schema_version)}
    return _PLACEHOLDER.sub(lambda match: names[match.group(1)], template)


def render_revision(revision: str, config: SchemaConfig, part: str = "upgrade") -> str:
    """Render one revision's SQL.

    ``part`` is ``"upgrade"`` (tables, indexes, functions), ``"downgrade"``,
    ``"vector_search"`` (HNSW indexes) or ``"vector_search_down"``; the two
    vector-search parts are empty unless ``config.dimensions`` is pinned to
    at most :data:`HNSW_MAX_DIMENSIONS`. Raises ``KeyError`` for an unknown
    revision or part.
    """
    indexed = config.dimensions is not None and config.dimensions <= HNSW_MAX_DIMENSIONS
    if part.startswith("vector_search") and not indexed:
        return ""
    template = sql_source.revision_file(revision, part)
    reached = int(revision) if part in ("upgrade", "vector_search") else int(revision) - 1
    return render(template, config, reached) if template else ""


def revision_steps(revision: str) -> tuple[Callable[..., None], Callable[..., None]]:
    """The ``upgrade`` and ``downgrade`` of the ``alembic/versions`` module of ``revision``.

    Each runs inside Alembic's migration transaction with the target
    :class:`SchemaConfig` (``schema_config=``, passed by ``alembic/env.py``).
    An upgrade runs the revision's SQL, then its vector-search part; a
    downgrade reverts them in the opposite order. A downgrade of revision
    :data:`prism_memory.citus.FIRST_REVISION` or older raises
    :class:`ConfigurationError` on a Citus-distributed install (the
    transaction rolls back: nothing is undone).
    """

    def connection():
        from alembic import op

        return op.get_bind().connection.driver_connection

    def run(parts: tuple[str, str], schema_config: SchemaConfig) -> None:
        for part in parts:
            sql = render_revision(revision, schema_config, part)
            # Straight to psycopg, one statement at a time (sql_source.split_statements says why):
            # no bind-parameter or percent processing of the DDL.
            for statement in sql_source.split_statements(sql):
                connection().execute(statement)

    def upgrade(schema_config: SchemaConfig) -> None:
        run(("upgrade", "vector_search"), schema_config)

    def downgrade(schema_config: SchemaConfig) -> None:
        if int(revision) <= citus.FIRST_REVISION:
            if citus.is_distributed(connection(), schema_config):
                raise ConfigurationError(
                    f"schema {schema_config.schema} is distributed over Citus, where revisions before "
                    f"{citus.FIRST_REVISION:04d} cannot run: it cannot be downgraded below {citus.FIRST_REVISION:04d}")
        run(("vector_search_down", "downgrade"), schema_config)

    return upgrade, downgrade


#: The table Alembic records the revision in; the hand-rendered DDL writes it too (``alembic stamp``).
_ALEMBIC_STAMP = (
    "create table if not exists {schema}.alembic_version (version_num varchar(32) not null, "
    "constraint alembic_version_pkc primary key (version_num));\n"
    "insert into {schema}.alembic_version (version_num) values ('{revision}');\n"
)


def build_memory_ddl(schema: str = DEFAULT_SCHEMA, table: str = DEFAULT_TABLE, dimensions: int | None = None) -> str:
    """Render the whole memory DDL at head (``sql/schema/install.sql``) for hosts who migrate by hand.

    A one-time install on an empty schema: run it once on a database without
    the schema's tables, then :func:`build_vector_search_ddl`, then create
    stores with ``skip_migrations=True``. It records the head revision in
    ``<schema>.alembic_version`` as Alembic does, so :func:`migrate` can take
    over later; an existing install is upgraded with :func:`migrate`, never
    with this DDL. It runs as one transaction of its own (``begin`` ...
    ``commit``; do not wrap it in another), whose first statement raises an
    error when the schema's entries table already exists: under psql, even
    without ``ON_ERROR_STOP``, every later statement then fails and nothing is
    applied. Raises :class:`InvalidIdentifierError` for a bad name and
    :class:`LimitExceededError` for a bad dimension.
    """
    config = SchemaConfig(schema, table, dimensions)
    entries = config.names["entries"]
    guard = (
        "begin;\n"
        "do $$\n"
        "begin\n"
        f"  if pg_catalog.to_regclass('{entries}') is not null then\n"
        f"    raise exception 'prism-memory is already installed here (% exists): this DDL installs into an empty "
        "schema once; upgrade an install with migrate()', '{entries}' using errcode = 'duplicate_table';\n"
        "  end if;\n"
        "end $$;\n\n"
    )
    install = render(sql_source.expand_head(sql_source.SCHEMA_DIR / "install.sql"), config)
    stamp = _ALEMBIC_STAMP.format(schema=config.names["schema"], revision=REVISIONS[-1])
    return guard + install + stamp + "commit;\n"


def build_vector_search_ddl(schema: str = DEFAULT_SCHEMA, table: str = DEFAULT_TABLE, dimensions: int | None = None) -> str:
    """Render the vector-search DDL at head (the HNSW index over the RAG chunks' ``vector(dimensions)``).

    Empty when unpinned or wider than :data:`HNSW_MAX_DIMENSIONS` (such
    installs rank exactly).
    """
    config = SchemaConfig(schema, table, dimensions)
    if config.dimensions is None or config.dimensions > HNSW_MAX_DIMENSIONS:
        return ""
    return render(sql_source.expand_head(sql_source.SCHEMA_DIR / "vector_search.sql"), config)


def alembic_config(dsn: str, config: SchemaConfig):
    """Build an Alembic ``Config`` for the packaged migrations, bound to ``dsn`` and ``config``."""
    from alembic.config import Config

    alembic_cfg = Config()
    alembic_cfg.set_main_option("script_location", str(sql_source.ALEMBIC_DIR))
    alembic_cfg.attributes["dsn"] = dsn
    alembic_cfg.attributes["schema_config"] = config
    return alembic_cfg


def grant_app_role(dsn: str, role: str, config: SchemaConfig | None = None, tenants: Sequence[str] | None = None) -> None:
    """Let ``role`` (an existing role) use the install and nothing more (blocking), optionally bound to tenants.

    Grants USAGE on the schema and EXECUTE on each of :data:`API_FUNCTIONS`;
    revokes every table privilege it may hold. The API functions run as their
    owner (SECURITY DEFINER, revision 0004), so the role reads and writes only
    through them. With ``tenants`` (a non-empty list of tenant ids), the role
    becomes tenant-bound: its bindings are replaced by exactly these tenants,
    every API function refuses it any other tenant (:class:`TenantAccessDeniedError`,
    PM016) and stamps its calls with the server's clock, whatever ``p_now`` it
    sends (revision 0008). Without ``tenants`` its bindings are left as they
    are (a role with none is trusted with every tenant). Grants and bindings
    change in one transaction. Run it as the schema owner.

    Raises :class:`InvalidIdentifierError` for a role name that is not a
    plain identifier, or that is ``public`` or a predefined ``pg_*`` role;
    :class:`InvalidScopeError` for an empty ``tenants`` list or a blank tenant
    id (or one over 256 bytes); :class:`StoreError` when the role does not
    exist (or the grants fail); :class:`ConfigurationError` for ``tenants`` on
    a Citus-distributed install (:mod:`prism_memory.citus`); warns when the
    functions' owner is a superuser.
    """
    from psycopg import sql

    config = config or SchemaConfig()
    grantee = sql.Identifier(_app_role(role))
    bound = None if tenants is None else _tenant_ids(tenants)
    with _owner_transaction(dsn, config) as conn:
        if bound is not None and citus.is_distributed(conn, config):
            raise ConfigurationError(
                "tenant-bound roles are not supported on a Citus-distributed install: bindings are kept by role OID, "
                "which differs from node to node (docs/scaling.md)")
        owner_is_superuser = conn.execute(
            "select r.rolsuper from pg_proc p join pg_roles r on r.oid = p.proowner "
            "where p.pronamespace = (select oid from pg_namespace where nspname = %s) and p.proname = 'recall_v4'",
            (config.schema,),
        ).fetchone()
        if owner_is_superuser and owner_is_superuser[0]:
            warnings.warn(
                f"the functions of schema {config.schema!r} are owned by a superuser, so the API functions run as one; "
                "migrate as a dedicated owner role for production (docs/security.md)",
                stacklevel=2,
            )
        schema = sql.Identifier(config.schema)
        conn.execute(sql.SQL("grant usage on schema {} to {}").format(schema, grantee))
        conn.execute(sql.SQL("revoke all on all tables in schema {} from {}").format(schema, grantee))
        for name, arguments in API_FUNCTIONS:
            conn.execute(sql.SQL("grant execute on function {}.{}(" + arguments + ") to {}").format(
                schema, sql.Identifier(name), grantee))
        if bound is not None:
            binding = sql.SQL(config.names["tenant_binding"])
            conn.execute(sql.SQL("delete from {} where role_oid = %s::regrole").format(binding), (quote_identifier(role),))
            for tenant_id in bound:
                conn.execute(sql.SQL("insert into {} (tenant_id, role_oid) values (%s, %s::regrole)").format(binding),
                             (tenant_id, quote_identifier(role)))


def revoke_app_role(dsn: str, role: str, config: SchemaConfig | None = None) -> None:
    """Take back what :func:`grant_app_role` gave ``role`` (blocking): EXECUTE on the API functions, USAGE on the
    schema, and its tenant bindings, in one transaction. Run it as the schema owner.

    Raises :class:`InvalidIdentifierError` as :func:`grant_app_role` does and :class:`StoreError` when the
    role does not exist.
    """
    from psycopg import sql

    config = config or SchemaConfig()
    grantee = sql.Identifier(_app_role(role))
    with _owner_transaction(dsn, config) as conn:
        schema = sql.Identifier(config.schema)
        for name, arguments in API_FUNCTIONS:
            conn.execute(sql.SQL("revoke execute on function {}.{}(" + arguments + ") from {}").format(
                schema, sql.Identifier(name), grantee))
        conn.execute(sql.SQL("revoke usage on schema {} from {}").format(schema, grantee))
        conn.execute(sql.SQL("delete from {} where role_oid = %s::regrole").format(sql.SQL(config.names["tenant_binding"])),
                     (quote_identifier(role),))


def role_tenants(dsn: str, role: str, config: SchemaConfig | None = None) -> list[str]:
    """The tenants ``role`` is bound to, sorted (code-point order); empty for a role with no binding (trusted
    with every tenant, if it was granted the API at all). Raises :class:`StoreError` on a database failure."""
    from psycopg import sql

    config = config or SchemaConfig()
    with _owner_transaction(dsn, config) as conn:
        rows = conn.execute(sql.SQL("select tenant_id from {} where role_oid = %s::regrole order by tenant_id collate \"C\"")
                            .format(sql.SQL(config.names["tenant_binding"])), (quote_identifier(role),)).fetchall()
    return [row[0] for row in rows]


def _app_role(role: object) -> str:
    """``role`` if it may be granted the API: a plain identifier, not PUBLIC nor a predefined ``pg_*`` role."""
    validate_identifier("role", role)
    if role.lower() == "public" or role.lower().startswith("pg_"):  # type: ignore[union-attr]
        raise InvalidIdentifierError(f"role {role!r} is PUBLIC or a predefined role; name the application's own role")
    return role  # type: ignore[return-value]


def _tenant_ids(tenants: object) -> list[str]:
    """A non-empty list of distinct tenant ids (the id rule, 256 bytes), else :class:`InvalidScopeError`."""
    from .checks import check_scope_id

    if isinstance(tenants, (str, bytes)) or not isinstance(tenants, Sequence) or not tenants:
        raise InvalidScopeError("tenants must be a non-empty list of tenant ids")
    return list(dict.fromkeys(check_scope_id("tenant_id", tenant_id) for tenant_id in tenants))


@contextmanager
def _owner_transaction(dsn: str, config: SchemaConfig) -> Iterator[Any]:
    """One autocommit connection in a transaction, errors wrapped (:class:`StoreError`), search_path pinned to
    the schema, pgvector's schema and pg_catalog (so the function signatures resolve)."""
    import psycopg
    from psycopg import sql

    from .postgres.errors import wrap_exceptions

    with wrap_exceptions(), psycopg.connect(dsn, autocommit=True) as conn, conn.transaction():
        vector_schema = conn.execute("select n.nspname from pg_extension x join pg_namespace n on n.oid = x.extnamespace "
                                     "where x.extname = 'vector'").fetchone()[0]
        conn.execute(sql.SQL("select set_config('search_path', {}, true)").format(
            sql.Literal(f"{quote_identifier(config.schema)}, {quote_identifier(vector_schema)}, pg_catalog")))
        yield conn


def migrate(dsn: str, config: SchemaConfig | None = None, revision: str = "head") -> None:
    """Upgrade the database at ``dsn`` to ``revision`` (blocking; takes an advisory lock, idempotent)."""
    from alembic import command

    command.upgrade(alembic_config(dsn, config or SchemaConfig()), revision)


def downgrade(dsn: str, config: SchemaConfig | None = None, revision: str = "base") -> None:
    """Downgrade the database at ``dsn`` to ``revision`` (``"base"`` removes every object but the schema)."""
    from alembic import command

    command.downgrade(alembic_config(dsn, config or SchemaConfig()), revision)


def sqlalchemy_url(dsn: str) -> str:
    """Turn a libpq URL (``postgresql://...``) into SQLAlchemy's psycopg 3 form."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if dsn.startswith(prefix):
            return "postgresql+psycopg://" + dsn[len(prefix) :]
    raise ValueError("the connection string must be a postgresql:// URL")
