"""The head schema (sql/schema) becomes the source of every function; recall_v1 and correct_v1 are retired.

Revision ID: 0007
Revises: 0006
"""

from prism_memory.schema import run_revision

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    run_revision(revision, schema_config, "upgrade")


def downgrade(schema_config) -> None:
    run_revision(revision, schema_config, "downgrade")
