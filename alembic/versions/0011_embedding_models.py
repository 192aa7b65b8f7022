"""embedding_models: the embedding-model guard (a per-thread record of the embedder's model, two guard functions).

Revision ID: 0011
Revises: 0010
"""

from prism_memory.schema import revision_steps

revision, down_revision = "0011", "0010"
branch_labels = depends_on = None
upgrade, downgrade = revision_steps(revision)
