"""Working-memory checks and ``{{path}}`` template rendering."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

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
    (:class:`ConfigurationError` if invalid, if its root ``$id`` is not an
    absolute URI, if a ``$ref`` or ``$dynamicRef`` does not resolve within the
    schema or the JSON Schema metaschemas: nothing is ever fetched, or if
    references form a loop that never descends into the document, such as
    ``{"$ref": "#"}``, which no document could ever finish checking against);
    ``hook`` is the host's
    ``validate_working_memory``. :meth:`check` raises
    :class:`WorkingMemoryValidationError` (not an object, not JSON, schema or
    hook failure) or :class:`PayloadTooLargeError` (over ``max_bytes`` UTF-8 bytes).
    """

    def __init__(self, schema: Mapping[str, Any] | None, hook: WorkingMemoryHook | None, max_bytes: int) -> None:
        self._validator = None
        if schema is not None:
            try:
                _check_schema(schema)
            except RecursionError as exc:
                raise ConfigurationError("working-memory schema nests too deeply to be checked") from exc
            self._validator = jsonschema.Draft202012Validator(schema, registry=METASCHEMAS)
        self._hook = hook
        self._max_bytes = max_bytes

    def check(self, data: object) -> dict[str, Any]:
        """Return ``data`` as stored (read back from its JSON) if valid; raise otherwise (nothing is written)."""
        encoded = json_document(data, "working memory", WorkingMemoryValidationError).encode("utf-8")
        if len(encoded) > self._max_bytes:
            raise PayloadTooLargeError(f"working memory is {len(encoded)} bytes, over the {self._max_bytes}-byte cap")
        if self._validator is not None:
            try:
                error = jsonschema.exceptions.best_match(self._validator.iter_errors(data))
            except RecursionError as exc:
                raise WorkingMemoryValidationError("working memory nests too deeply to check against its schema") from exc
            except Unresolvable as exc:  # a reference construction could resolve and validation could not
                raise WorkingMemoryValidationError(f"working-memory schema reference does not resolve: {exc}") from exc
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


def _check_schema(schema: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigurationError` unless ``schema`` is valid, its references resolve, and none loops in place."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(f"working-memory schema is not a valid JSON Schema: {exc.message}") from exc
    root_id = schema.get("$id") if isinstance(schema, Mapping) else None
    if isinstance(root_id, str) and not urlsplit(root_id).scheme:
        raise ConfigurationError(f"working-memory schema: the root $id {root_id!r} must be an absolute URI "
                                 "(with a scheme, such as urn: or https:), or left out")
    root = DRAFT202012.create_resource(schema)
    resolver = METASCHEMAS.resolver_with_root(root)
    _check_references(root, resolver)
    _refuse_in_place_loops(root, resolver)


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


#: Keywords whose subschemas apply to the same instance (JSON Schema 2020-12's in-place applicators).
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")
_IN_PLACE_MAP = ("dependentSchemas",)


def _in_place_subschemas(contents: Any, resolver: Any) -> list[tuple[Any, Any]]:
    """The subschemas (with their resolvers) that apply to the same instance as ``contents``: its in-place
    applicators' subschemas and the targets of its ``$ref`` and ``$dynamicRef`` (the latter resolved
    statically, which is where it lands unless a ``$dynamicAnchor`` further out overrides it)."""
    if not isinstance(contents, Mapping):
        return []
    children = [contents[key] for key in _IN_PLACE_ONE if key in contents]
    children += [child for key in _IN_PLACE_LIST for child in contents.get(key) or ()]
    children += [child for key in _IN_PLACE_MAP for child in (contents.get(key) or {}).values()]
    found = [(child, resolver.in_subresource(DRAFT202012.create_resource(child))) for child in children]
    for keyword in ("$ref", "$dynamicRef"):
        if isinstance(contents.get(keyword), str):
            resolved = resolver.lookup(contents[keyword])
            found.append((resolved.contents, resolved.resolver))
    return found


def _refuse_in_place_loops(root: Resource[Any], resolver: Any) -> None:
    """Raise :class:`ConfigurationError` when, from any subschema of ``root``, a chain of references and
    in-place applicators leads back to a subschema already on the chain: checking a document would then
    recurse without end. Recursion through ``properties``, ``items`` and the other keywords that descend
    into the document is fine: it ends where the document does."""
    finished: set[int] = set()

    def visit(contents: Any, resolver: Any, chain: set[int]) -> None:
        key = id(contents)
        if key in chain:
            raise ConfigurationError(
                "working-memory schema: a $ref loop never descends into the document (as {\"$ref\": \"#\"} "
                "does), so no document could be checked against it"
            )
        if key in finished:
            return
        chain.add(key)
        for child, child_resolver in _in_place_subschemas(contents, resolver):
            visit(child, child_resolver, chain)
        chain.discard(key)
        finished.add(key)

    def every_subschema(resource: Resource[Any], resolver: Any) -> None:
        resolver = resolver.in_subresource(resource)
        visit(resource.contents, resolver, set())
        for subresource in resource.subresources():
            every_subschema(subresource, resolver)

    every_subschema(root, resolver)


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
