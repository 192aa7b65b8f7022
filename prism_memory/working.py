"""Working-memory checks and ``{{path}}`` template rendering."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
from jsonschema_specifications import REGISTRY as METASCHEMAS
from referencing import Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from .errors import ConfigurationError, PayloadTooLargeError, WorkingMemoryValidationError
from .jsoncodec import json_document, load_json

#: Host hook: return ``True``/``None`` to accept, ``False`` to reject, or raise.
WorkingMemoryHook = Callable[[dict[str, Any]], "bool | None"]


class WorkingMemoryValidator:
    """Checks a working-memory document before it is written.

    ``schema`` is a JSON Schema (Draft 2020-12), itself checked at construction
    (:class:`ConfigurationError` if invalid, or if a ``$ref`` or
    ``$dynamicRef`` does not resolve within the schema or the JSON Schema
    metaschemas: nothing is ever fetched); ``hook`` is the host's
    ``validate_working_memory``. :meth:`check` raises
    :class:`WorkingMemoryValidationError` (not an object, not JSON, schema or
    hook failure) or :class:`PayloadTooLargeError` (over ``max_bytes`` UTF-8 bytes).
    """

    def __init__(self, schema: Mapping[str, Any] | None, hook: WorkingMemoryHook | None, max_bytes: int) -> None:
        self._validator = None
        if schema is not None:
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise ConfigurationError(f"working-memory schema is not a valid JSON Schema: {exc.message}") from exc
            root = DRAFT202012.create_resource(schema)
            _check_references(root, METASCHEMAS.resolver_with_root(root))
            self._validator = jsonschema.Draft202012Validator(schema, registry=METASCHEMAS)
        self._hook = hook
        self._max_bytes = max_bytes

    def check(self, data: object) -> dict[str, Any]:
        """Return ``data`` as stored (read back from its JSON) if valid; raise otherwise (nothing is written)."""
        encoded = json_document(data, "working memory", WorkingMemoryValidationError).encode("utf-8")
        if len(encoded) > self._max_bytes:
            raise PayloadTooLargeError(f"working memory is {len(encoded)} bytes, over the {self._max_bytes}-byte cap")
        if self._validator is not None:
            error = jsonschema.exceptions.best_match(self._validator.iter_errors(data))
            if error is not None:
                path = "/".join(str(part) for part in error.absolute_path) or "(root)"
                raise WorkingMemoryValidationError(f"working memory fails its schema at {path}: {error.message}")
        if self._hook is not None:
            try:
                verdict = self._hook(data)
            except Exception as exc:
                raise WorkingMemoryValidationError(f"working memory rejected by validate_working_memory: {exc}") from exc
            if verdict is False:
                raise WorkingMemoryValidationError("working memory rejected by validate_working_memory")
        return load_json(encoded)


def _check_references(resource: Resource[Any], resolver: Any) -> None:
    """Resolve every ``$ref`` and ``$dynamicRef`` of ``resource`` and its subschemas with ``resolver``, else raise
    :class:`ConfigurationError`. The registry behind it holds the schema and the metaschemas and retrieves
    nothing, so a remote (``https:``) or ``file:`` reference is refused, never fetched."""
    resolver = resolver.in_subresource(resource)
    if isinstance(resource.contents, Mapping):
        for keyword in ("$ref", "$dynamicRef"):
            reference = resource.contents.get(keyword)
            if isinstance(reference, str):
                try:
                    resolver.lookup(reference)
                except Unresolvable as exc:
                    raise ConfigurationError(
                        f"working-memory schema: {keyword} {reference!r} does not resolve within the schema "
                        "(remote and file references are never fetched)"
                    ) from exc
    for subresource in resource.subresources():
        _check_references(subresource, resolver)


_TEMPLATE_PATH = re.compile(r"\{\{\s*([^{}\s]+)\s*\}\}")


def render_template(template: str, data: Mapping[str, Any] | None) -> str:
    """Fill ``{{path}}`` placeholders from ``data``.

    A path is dot-separated keys (``preferences.format``) or list indexes
    (``items.0``). Strings render as-is, other values as compact JSON, and a
    missing path as the empty string.
    """

    def lookup(match: re.Match[str]) -> str:
        value: Any = data or {}
        for part in match.group(1).split("."):
            if isinstance(value, Mapping) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                return ""
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    return _TEMPLATE_PATH.sub(lookup, template)
