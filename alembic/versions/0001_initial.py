"""Initial schema: working memory, entries, companion tables and the v1 functions.

Revision ID: 0001
Revises:
"""

from prism_memory.schema import run_revision

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    run_revision(revision, schema_config, "upgrade")


def downgrade(schema_config) -> None:
    run_revision(revision, schema_config, "downgrade")
