"""Initial schema: working memory, entries, companion tables and the v1 functions.

Revision ID: 0001
Revises:
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0001", None
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
