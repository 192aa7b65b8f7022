"""Least privilege: SECURITY DEFINER API functions, no EXECUTE for PUBLIC, tenant row-level security.

Revision ID: 0004
Revises: 0003
"""

from alembic import op
from prism_memory.schema import render_revision

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    _run(render_revision("0004", schema_config))


def downgrade(schema_config) -> None:
    _run(render_revision("0004", schema_config, "downgrade"))


def _run(sql: str) -> None:
    # Straight to psycopg: no bind-parameter or percent processing of the DDL.
    op.get_bind().connection.driver_connection.execute(sql)
