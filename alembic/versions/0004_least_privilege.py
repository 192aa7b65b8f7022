"""Least privilege: SECURITY DEFINER API functions, no EXECUTE for PUBLIC, tenant row-level security.

Revision ID: 0004
Revises: 0003
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0004", "0003"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
