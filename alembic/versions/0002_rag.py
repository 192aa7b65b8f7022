"""RAG vector store: chunks, source access versions, the rag_*_v1 functions; HNSW moves to the chunks.

Revision ID: 0002
Revises: 0001
"""

from prism_memory.schema import run_revision

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    run_revision(revision, schema_config, "upgrade")


def downgrade(schema_config) -> None:
    run_revision(revision, schema_config, "downgrade")
