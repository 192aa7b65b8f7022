"""The scope of an MCP caller: the tenant, resource, default thread and database the operator gave it."""

from __future__ import annotations

import dataclasses

from ..checks import check_scope
from ..errors import ConfigurationError, ValidationError
from ..memory import check_reserved_segment
from ..types import Scope

#: The thread semantic tools use when a call names none and the scope configures none.
DEFAULT_THREAD = "main"
#: Environment variables the stdio transport reads its scope from (a flag wins).
SCOPE_ENVIRONMENT = {"tenant": "PRISM_MEMORY_TENANT", "resource": "PRISM_MEMORY_RESOURCE", "thread": "PRISM_MEMORY_THREAD"}


@dataclasses.dataclass(frozen=True, slots=True)
class ServerScope:
    """Where one caller's memory lives, as the operator configured it: tenant and resource (fixed), the
    default thread of semantic tools (a call may name another thread of the resource), the database URL
    its calls use (``None``: the server's; e.g. a tenant-bound role, docs/security.md), and a name for logs."""

    tenant_id: str
    resource_id: str
    thread_id: str = DEFAULT_THREAD
    dsn: str | None = dataclasses.field(default=None, repr=False)
    name: str = "stdio"


def server_scope(
    tenant: object, resource: object, thread: object = None, *, dsn: str | None = None, name: str = "stdio", where: str = ""
) -> ServerScope:
    """A checked :class:`ServerScope`: the id rules of :func:`~prism_memory.create_memory` (non-blank, at
    most 256 bytes, no reserved ``/agent:`` segment). Raises :class:`ConfigurationError` naming ``where``."""
    thread = DEFAULT_THREAD if thread is None else thread
    try:
        check_scope(Scope(tenant, resource, thread), thread_required=True)  # type: ignore[arg-type]
        check_reserved_segment("resource_id", resource)
        check_reserved_segment("thread_id", thread)
    except ValidationError as exc:
        raise ConfigurationError(f"{where}{exc}") from exc
    return ServerScope(tenant, resource, thread, dsn, name)  # type: ignore[arg-type]
