"""remember_batch_v1: one call writes the entries of many threads of one tenant (bulk ingest).

Revision ID: 0006
Revises: 0005
"""

from alembic import op
from prism_memory.schema import render_revision

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    _run(render_revision("0006", schema_config))


def downgrade(schema_config) -> None:
    _run(render_revision("0006", schema_config, "downgrade"))


def _run(sql: str) -> None:
    # Straight to psycopg: no bind-parameter or percent processing of the DDL.
    op.get_bind().connection.driver_connection.execute(sql)
