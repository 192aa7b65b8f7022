"""correct_v2: a corrected entry is re-derived from its sources (lineage cycles).

Revision ID: 0005
Revises: 0004
"""

from prism_memory.schema import run_revision

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    run_revision(revision, schema_config, "upgrade")


def downgrade(schema_config) -> None:
    run_revision(revision, schema_config, "downgrade")
