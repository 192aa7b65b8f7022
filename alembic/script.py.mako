"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision}
"""

from prism_memory.schema import revision_steps

revision, down_revision = "${up_revision}", "${down_revision}"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
