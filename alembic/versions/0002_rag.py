"""RAG vector store: chunks, source access versions, the rag_*_v1 functions; HNSW moves to the chunks.

Revision ID: 0002
Revises: 0001
"""

from alembic import op
from prism_memory.schema import render_revision

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade(schema_config) -> None:
    _run(render_revision("0002", schema_config))
    _run(render_revision("0002", schema_config, "vector_search"))


def downgrade(schema_config) -> None:
    _run(render_revision("0002", schema_config, "vector_search_down"))
    _run(render_revision("0002", schema_config, "downgrade"))


def _run(sql: str) -> None:
    # Straight to psycopg: no bind-parameter or percent processing of the DDL.
    if sql:
        op.get_bind().connection.driver_connection.execute(sql)
