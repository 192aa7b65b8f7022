"""correct_v2: a corrected entry is re-derived from its sources (lineage cycles).

Revision ID: 0005
Revises: 0004
"""

from alembic import op
from prism_memory.schema import render_revision

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    _run(render_revision("0005", schema_config))


def downgrade(schema_config) -> None:
    _run(render_revision("0005", schema_config, "downgrade"))


def _run(sql: str) -> None:
    # Straight to psycopg: no bind-parameter or percent processing of the DDL.
    op.get_bind().connection.driver_connection.execute(sql)
