"""Adapters that plug prism-memory into agent frameworks, each behind an optional extra (docs/integrations.md).

Each adapter maps the framework's names and shapes onto the public :class:`~prism_memory.memory.Memory` and RAG
store calls; consent, lineage, document ACL, expiry and scope isolation stay the SQL functions' rules.
"""
