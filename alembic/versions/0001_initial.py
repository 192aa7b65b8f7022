"""Initial schema: working memory, entries, companion tables and the v1 functions.

Revision ID: 0001
Revises:
"""

from alembic import op
from prism_memory.schema import render_revision

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    _run(render_revision("0001", schema_config))
    vector_search = render_revision("0001", schema_config, "vector_search")
    if vector_search:
        _run(vector_search)


def downgrade(schema_config) -> None:
    _run(render_revision("0001", schema_config, "downgrade"))


def _run(sql: str) -> None:
    # Straight to psycopg: no bind-parameter or percent processing of the DDL.
    op.get_bind().connection.driver_connection.execute(sql)
