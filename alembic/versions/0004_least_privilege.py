"""Least privilege: SECURITY DEFINER API functions, no EXECUTE for PUBLIC, tenant row-level security.

Revision ID: 0004
Revises: 0003
"""

from prism_memory.schema import run_revision

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    run_revision(revision, schema_config, "upgrade")


def downgrade(schema_config) -> None:
    run_revision(revision, schema_config, "downgrade")
