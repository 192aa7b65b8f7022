"""Composite recall scoring and explain: recall_v2 and scoring_weights_v1.

Revision ID: 0003
Revises: 0002
"""

from alembic import op
from prism_memory.schema import render_revision

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    _run(render_revision("0003", schema_config))


def downgrade(schema_config) -> None:
    _run(render_revision("0003", schema_config, "downgrade"))


def _run(sql: str) -> None:
    # Straight to psycopg: no bind-parameter or percent processing of the DDL.
    op.get_bind().connection.driver_connection.execute(sql)
