"""citus_plan_cache: recall_v3 leaves the plan mode of a distributed install to distribute().

Revision ID: 0014
Revises: 0013
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0014", "0013"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
