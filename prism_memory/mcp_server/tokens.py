"""Bearer tokens of the MCP server over HTTP: the operator's token file (TOML, SHA-256 digests only) and the
SDK's ``TokenVerifier`` that maps a presented token to the scope its binding opens."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import secrets
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import PrivateAttr

from ..errors import ConfigurationError
from .scopes import ServerScope, server_scope


@dataclasses.dataclass(frozen=True, slots=True)
class TokenBinding:
    """One entry of the token file: the SHA-256 ``digest`` of a bearer token and the scope it opens."""

    name: str
    digest: bytes = dataclasses.field(repr=False)
    scope: ServerScope


_TOKEN_KEYS = {"name", "sha256", "tenant", "resource", "thread", "dsn"}
#: The SHA-256 of the empty token (what ``echo -n "$UNSET" | sha256sum`` prints): refused in a token file.
EMPTY_TOKEN_DIGEST = hashlib.sha256(b"").hexdigest()


def hash_token(token: str) -> str:
    """The hex SHA-256 of ``token``'s UTF-8 bytes: what the token file stores instead of the token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    """A fresh bearer token: 32 random bytes, URL-safe base64 (43 characters)."""
    return secrets.token_urlsafe(32)


def load_token_file(path: str | Path) -> list[TokenBinding]:
    """The bindings of a token file (TOML; docs/mcp.md, "The token file").

    Each ``[[token]]`` table has ``sha256`` (the hex SHA-256 of the token, from ``prism-memory mcp-token``),
    ``tenant`` and ``resource``, and optionally ``name`` (for logs, default ``token-N``), ``thread`` (the
    default thread, default ``main``) and ``dsn`` (a database URL for this token's calls, e.g. a role bound
    to its tenant). Raises :class:`ConfigurationError` for an unreadable file, invalid TOML, an unknown
    key, a ``[token]`` table, a malformed or repeated digest or name (naming both entries), the digest of the
    empty token, an empty ``dsn``, a bad scope id, and a file with no token.
    """
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(f"cannot read the token file {path}: {exc.strerror or exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"the token file {path} is not valid TOML: {exc}") from exc
    unknown = set(document) - {"token"}
    if unknown:
        raise ConfigurationError(f"the token file {path} has unknown top-level keys {sorted(unknown)}; use [[token]] tables")
    tables = document.get("token", [])
    if isinstance(tables, dict):
        raise ConfigurationError(f"the token file {path} has a [token] table: write each token as [[token]] (double brackets)")
    if not isinstance(tables, list) or not tables:
        raise ConfigurationError(f"the token file {path} names no token: add a [[token]] table (prism-memory mcp-token)")
    bindings: list[TokenBinding] = []
    for number, table in enumerate(tables, start=1):
        where = f"{path}: token {number}: "
        if not isinstance(table, dict):
            raise ConfigurationError(f"{where}not a table")
        if set(table) - _TOKEN_KEYS:
            raise ConfigurationError(f"{where}unknown keys {sorted(set(table) - _TOKEN_KEYS)}")
        values = {key: table.get(key) for key in _TOKEN_KEYS}
        if any(value is not None and not isinstance(value, str) for value in values.values()):
            raise ConfigurationError(f"{where}every value must be a string")
        digest = values["sha256"]
        if digest is None or len(digest) != 64 or any(char not in "0123456789abcdef" for char in digest.lower()):
            raise ConfigurationError(f"{where}sha256 must be the 64 hex digits of the token's SHA-256")
        if digest.lower() == EMPTY_TOKEN_DIGEST:
            raise ConfigurationError(f"{where}sha256 is the digest of an empty token (was the token's variable unset?)")
        if values["dsn"] is not None and not values["dsn"].strip():
            raise ConfigurationError(f"{where}dsn is empty: leave it out to use the server's database")
        name = values["name"] or f"token-{number}"
        scope = server_scope(values["tenant"], values["resource"], values["thread"], dsn=values["dsn"], name=name, where=where)
        bindings.append(TokenBinding(name, bytes.fromhex(digest), scope))
    for what, key in (("digest", lambda b: b.digest), ("name", lambda b: b.name)):
        first: dict[Any, int] = {}
        for number, binding in enumerate(bindings, start=1):
            if (earlier := first.setdefault(key(binding), number)) != number:
                raise ConfigurationError(f"{path}: token {number} ({binding.name}) repeats the {what} of token {earlier}")
    return bindings


def token_stanza(name: str, token: str, scope: ServerScope) -> str:
    """The ``[[token]]`` table (TOML text) binding ``token``'s digest to ``scope``; the token itself is not in it."""
    fields = {"name": name, "sha256": hash_token(token), "tenant": scope.tenant_id, "resource": scope.resource_id,
              "thread": scope.thread_id, "dsn": scope.dsn}
    lines = [f"{key} = {toml_string(value)}" for key, value in fields.items() if value is not None]
    return "\n".join(["[[token]]", *lines]) + "\n"


def toml_string(value: str) -> str:
    """``value`` as a TOML basic string: a JSON string (control characters escaped), DEL escaped too."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


class ScopedAccessToken(AccessToken):
    """An accepted bearer token: the SDK's :class:`AccessToken` (``client_id`` is the binding's name) plus the
    scope its binding opens, kept private so it is never serialised or logged."""

    _scope: ServerScope = PrivateAttr()

    @property
    def scope(self) -> ServerScope:
        return self._scope


class BearerTokens:
    """The SDK's ``TokenVerifier`` over a token file's bindings.

    ``verify_token`` hashes the presented token and compares the digest with every binding's in constant
    time (``hmac.compare_digest``, no early exit), so timing says nothing about which binding, if any,
    came close. An unknown or empty token gives ``None``, which the SDK answers with 401.
    """

    def __init__(self, bindings: Sequence[TokenBinding]) -> None:
        self._bindings = tuple(bindings)

    async def verify_token(self, token: str) -> AccessToken | None:
        if not token:  # never a token, whatever the bindings
            return None
        try:
            digest = hashlib.sha256(token.encode("utf-8")).digest()
        except UnicodeEncodeError:
            return None
        match = None
        for binding in self._bindings:
            if hmac.compare_digest(digest, binding.digest):
                match = binding
        if match is None:
            return None
        accepted = ScopedAccessToken(token=match.name, client_id=match.name, subject=match.name, scopes=[])
        accepted._scope = match.scope
        return accepted


def token_scope() -> ServerScope:
    """The scope of the bearer token of the HTTP request being served (the SDK's auth middleware already
    refused the request with 401 when it had none); a :class:`ToolError` outside an authenticated request."""
    token = get_access_token()
    if not isinstance(token, ScopedAccessToken):
        raise ToolError("this request carries no authenticated scope")
    return token.scope
