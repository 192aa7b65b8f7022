"""remember_batch_v1: one call writes the entries of many threads of one tenant (bulk ingest).

Revision ID: 0006
Revises: 0005
"""

from prism_memory.schema import run_revision

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    run_revision(revision, schema_config, "upgrade")


def downgrade(schema_config) -> None:
    run_revision(revision, schema_config, "downgrade")
