"""What a failed MCP call answers: a :class:`~prism_memory.errors.PrismMemoryError` as a readable, redacted
text, raised as the SDK's error for a tool, a resource or a prompt."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from mcp import MCPError
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS

from ..errors import (
    EmbeddingFailedError,
    EmbeddingUnavailableError,
    PrismMemoryError,
    StoreClosedError,
    StoreError,
    StoreUnavailableError,
    TenantAccessDeniedError,
    ValidationError,
)
from ..redaction import Redaction

logger = logging.getLogger("prism_memory.mcp")


def describe(error: PrismMemoryError, redaction: Redaction) -> str:
    """The readable, redacted text of ``error`` for a tool's caller: ``"<ErrorType>: <message>"``.

    Database and embedder failures get fixed texts (their messages may hold server details: an endpoint's
    answer, an address, a host exception; the log has them), a tenant-bound role's refusal says to ask the
    operator.
    """
    fixed = {
        StoreUnavailableError: "the database is unavailable now; retry later",
        StoreClosedError: "the server is shutting down",
        TenantAccessDeniedError: "the server's database role may not act for this tenant; ask the operator",
        EmbeddingUnavailableError: "the embedder is unavailable now; retry later",
    }
    text = next((message for kind, message in fixed.items() if isinstance(error, kind)), None)
    for kind, what in ((StoreError, "database"), (EmbeddingFailedError, "embedder")):
        if text is None and isinstance(error, kind):
            logger.error("a tool call failed in the %s", what, exc_info=error)
            text = f"the {what} failed unexpectedly; the server's log has the details"
    if text is None:
        try:
            text = redaction.text(str(error))
        except PrismMemoryError:  # a redactor that fails on the message itself: say no more than the type
            text = "(message withheld)"
    return f"{type(error).__name__}: {text}"


@contextmanager
def tool_errors(redaction: Redaction) -> Iterator[None]:
    """Inside a tool: a :class:`PrismMemoryError` leaves as a :class:`ToolError` (an ``is_error`` result the model
    reads) carrying :func:`describe`'s text and no traceback. Other exceptions pass on to the SDK, which answers
    with its generic "Error executing tool <name>" and logs them."""
    try:
        yield
    except PrismMemoryError as exc:
        raise ToolError(describe(exc, redaction)) from None


@contextmanager
def protocol_errors(redaction: Redaction, what: Callable[[PrismMemoryError, str], Exception]) -> Iterator[None]:
    """Inside a resource or prompt (no ``is_error`` results there): a :class:`PrismMemoryError` leaves as
    ``what(error, text)`` with :func:`describe`'s text, the SDK's error for that kind of request."""
    try:
        yield
    except PrismMemoryError as exc:
        raise what(exc, describe(exc, redaction)) from None


def resource_error(error: PrismMemoryError, text: str) -> Exception:
    """A resource read's failure: the SDK's :class:`ResourceError` (JSON-RPC -32603 with ``text``)."""
    return ResourceError(text)


def prompt_error(error: PrismMemoryError, text: str) -> Exception:
    """A prompt's failure: JSON-RPC "invalid params" for bad input, "internal error" otherwise, with ``text``."""
    return MCPError(INVALID_PARAMS if isinstance(error, ValidationError) else INTERNAL_ERROR, text)
