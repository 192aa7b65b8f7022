"""Composite recall scoring and explain: recall_v2 and scoring_weights_v1.

Revision ID: 0003
Revises: 0002
"""

from prism_memory.schema import run_revision

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    run_revision(revision, schema_config, "upgrade")


def downgrade(schema_config) -> None:
    run_revision(revision, schema_config, "downgrade")
