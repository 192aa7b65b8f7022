"""The head schema (sql/schema) becomes the source of every function; recall_v1 and correct_v1 are retired.

Revision ID: 0007
Revises: 0006
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0007", "0006"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
