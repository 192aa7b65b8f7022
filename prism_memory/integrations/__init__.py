"""Adapters that plug prism-memory into agent frameworks, each behind an optional extra (docs/integrations.md).

Each adapter maps the framework's names and shapes onto the public :class:`~prism_memory.memory.Memory` API;
every rule (consent, lineage, expiry, scope isolation) stays in the store's SQL functions.
"""
