"""Metadata filters: the language over an entry's ``metadata``, checked and evaluated in Python.

The SQL function ``metadata_filter_v1`` (``sql/schema/functions/metadata_filter_v1.sql``)
checks a filter and compiles it into a strict jsonpath predicate that callers
apply as ``metadata @@ path``; this module is its Python side:
:func:`check_filter` raises the same :class:`InvalidFilterError` (SQLSTATE
``PM019``) for the same filters, and :func:`matches` is the emulator's
evaluator, giving the answer ``@@`` gives. The grammar and its semantics are
stated once, in docs/api.md ("Metadata filters"); in short:

- a filter is a JSON object whose keys are ANDed: ``$and`` / ``$or`` (a
  non-empty array of filters), ``$not`` (a filter), or a field path
  (``"user.tier"`` reads ``metadata["user"]["tier"]``);
- a field condition is a scalar (``$eq``), an object of operators (``$eq $ne
  $gt $gte $lt $lte $in $nin $exists $contains``, ANDed), or any other object
  or array: containment at that path, as ``jsonb @>`` below the top level;
- values are compared as JSON: a number never equals a string or a boolean,
  ``1 == 1.0``, strings compare by code point, order operators compare numbers
  with numbers and strings with strings only; ``$ne``, ``$nin`` and ``$not``
  are exact negations (a missing field matches ``$ne``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from .errors import InvalidFilterError
from .jsoncodec import json_text, load_json

#: Deepest nesting: the filter is level 1; each ``$and``/``$or`` element, ``$not`` operand and operator
#: object sits one level below the object holding it.
MAX_FILTER_DEPTH = 8
#: Most conditions in one filter: each operator and scalar shorthand counts one, a containment document the
#: elements of its arrays (at least one), since a stored array is compared with each of them.
MAX_FILTER_CONDITIONS = 64
#: Most elements in one ``$in`` / ``$nin`` array.
MAX_FILTER_IN = 256
#: Most segments in one field path.
MAX_PATH_SEGMENTS = 8
#: Largest filter, in bytes of its ``jsonb`` text (``octet_length(filter::text)``: :func:`jsonb_text_bytes`).
MAX_FILTER_BYTES = 16 * 1024

#: The field operators, each taking one operand.
FIELD_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$contains")
_ORDER = ("$gt", "$gte", "$lt", "$lte")


class _Missing:
    """A field path that reaches no value."""

    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


def _kind(value: Any) -> str:
    """The JSON type of a loaded value, as ``jsonb_typeof`` names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _is_scalar(value: Any) -> bool:
    return not isinstance(value, (dict, list))


def _quoted(text: str) -> str:
    """A path or key as the messages quote it (JSON string syntax, as ``to_jsonb(text)::text`` writes it)."""
    return json.dumps(text, ensure_ascii=False)


def _jsonb_order(node: dict[str, Any]) -> list[str]:
    """An object's keys in ``jsonb``'s order (shorter first, then by bytes), which ``jsonb_each`` follows."""
    return sorted(node, key=lambda key: (len(key.encode("utf-8")), key.encode("utf-8")))


def _number_text(value: int | float) -> str:
    """A JSON number as ``numeric`` prints it in ``jsonb`` text (no exponent, no negative zero)."""
    if isinstance(value, int):
        return str(value)
    text = format(Decimal(repr(value)), "f")
    return text[1:] if text.startswith("-") and Decimal(text) == 0 else text


def jsonb_text_bytes(value: Any) -> int:
    """The length in UTF-8 bytes of ``value``'s ``jsonb`` text (``octet_length(value::jsonb::text)`` in SQL).

    ``jsonb`` writes ``", "`` and ``": "`` between items, escapes strings as
    ``json.dumps`` does, and prints numbers as ``numeric`` (:func:`_number_text`);
    its key order does not change the length. ``value`` is loaded JSON
    (:func:`prism_memory.jsoncodec.load_json`).
    """
    if isinstance(value, dict):
        inner = sum(len(_quoted(key).encode("utf-8")) + 2 + jsonb_text_bytes(item) for key, item in value.items())
        return 2 + inner + 2 * max(len(value) - 1, 0)
    if isinstance(value, list):
        return 2 + sum(jsonb_text_bytes(item) for item in value) + 2 * max(len(value) - 1, 0)
    if isinstance(value, str):
        return len(_quoted(value).encode("utf-8"))
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    return len(_number_text(value))


class _Checker:
    """One walk over a filter, in the order ``metadata_filter_v1`` walks it (so both name the same fault first)."""

    def __init__(self) -> None:
        self.conditions = 0

    def count(self, where: str, weight: int = 1) -> None:
        self.conditions += weight
        if self.conditions > MAX_FILTER_CONDITIONS:
            raise InvalidFilterError(f"filter: more than {MAX_FILTER_CONDITIONS} conditions (at {where})")

    def filter(self, node: Any, where: str, depth: int) -> None:
        if not isinstance(node, dict):
            raise InvalidFilterError(f"filter: {where} must be a JSON object, got {_kind(node)}")
        if depth > MAX_FILTER_DEPTH:
            raise InvalidFilterError(f"filter: {where} is nested deeper than {MAX_FILTER_DEPTH} levels")
        for key in _jsonb_order(node):
            value = node[key]
            if key in ("$and", "$or"):
                if not isinstance(value, list) or not value:
                    raise InvalidFilterError(f"filter: {key} in {where} must be a non-empty array of filters")
                for position, item in enumerate(value):
                    self.filter(item, f"{where}.{key}[{position}]", depth + 1)
            elif key == "$not":
                self.filter(value, f"{where}.$not", depth + 1)
            elif key.startswith("$"):
                raise InvalidFilterError(f"filter: unknown operator {_quoted(key)} in {where} (a field path must not start with $)")
            else:
                self.field(key, value, where, depth)

    def field(self, path: str, condition: Any, where: str, depth: int) -> None:
        at = f"{where} field {_quoted(path)}"
        segments = path.split(".")
        if any(segment == "" for segment in segments):
            raise InvalidFilterError(f"filter: {at}: a field path has no empty segment")
        if len(segments) > MAX_PATH_SEGMENTS:
            raise InvalidFilterError(f"filter: {at}: a field path has at most {MAX_PATH_SEGMENTS} segments")
        if any(segment.startswith("$") for segment in segments):
            raise InvalidFilterError(f"filter: {at}: a path segment must not start with $")
        if isinstance(condition, dict) and condition and any(key.startswith("$") for key in condition):
            if not all(key.startswith("$") for key in condition):
                raise InvalidFilterError(f"filter: {at} mixes operators and other keys")
            if depth + 1 > MAX_FILTER_DEPTH:
                raise InvalidFilterError(f"filter: {at} is nested deeper than {MAX_FILTER_DEPTH} levels")
            for operator in _jsonb_order(condition):
                self.operator(operator, condition[operator], at)
                self.count(at)
        else:
            if not _is_scalar(condition):
                _check_literal(condition, at)
            self.count(at, max(1, _array_elements(condition)))

    @staticmethod
    def operator(operator: str, operand: Any, at: str) -> None:
        kind = _kind(operand)
        if operator in ("$eq", "$ne", "$contains"):
            if not _is_scalar(operand):
                raise InvalidFilterError(f"filter: {operator} at {at} takes a scalar, got {kind}")
        elif operator in _ORDER:
            if kind not in ("number", "string"):
                raise InvalidFilterError(f"filter: {operator} at {at} takes a number or a string, got {kind}")
        elif operator in ("$in", "$nin"):
            if not isinstance(operand, list) or not operand or not all(_is_scalar(item) for item in operand):
                raise InvalidFilterError(f"filter: {operator} at {at} takes a non-empty array of scalars")
            if len(operand) > MAX_FILTER_IN:
                raise InvalidFilterError(f"filter: {operator} at {at} has more than {MAX_FILTER_IN} elements")
        elif operator == "$exists":
            if kind != "boolean":
                raise InvalidFilterError(f"filter: $exists at {at} takes true or false, got {kind}")
        else:
            raise InvalidFilterError(f"filter: unknown operator {_quoted(operator)} at {at}")


def _array_elements(document: Any) -> int:
    """The elements of every array in ``document``, at any depth."""
    if isinstance(document, list):
        return len(document) + sum(_array_elements(item) for item in document)
    if isinstance(document, dict):
        return sum(_array_elements(item) for item in document.values())
    return 0


def _check_literal(document: Any, at: str) -> None:
    """A containment document holds no key starting with ``$`` (an operator there would be read literally)."""
    if isinstance(document, dict):
        for key in _jsonb_order(document):
            if key.startswith("$"):
                raise InvalidFilterError(
                    f"filter: {at}: key {_quoted(key)} inside a containment document (operators apply to a field path)"
                )
            _check_literal(document[key], at)
    elif isinstance(document, list):
        for item in document:
            _check_literal(item, at)


def check_filter(filter: object) -> dict[str, Any] | None:
    """Check a metadata filter; return it as loaded JSON (numbers as ``jsonb`` gives them back), or ``None``.

    ``filter``: ``None`` (no filter), or a ``dict`` in the language of docs/api.md
    ("Metadata filters"); ``{}`` matches everything. Raises
    :class:`InvalidFilterError` (the SQL function raises ``PM019`` for the same
    filters) for a value that is not JSON (a ``set``, a non-finite number, a
    lone surrogate), a filter that is not an object, any malformed piece, and
    the caps: depth :data:`MAX_FILTER_DEPTH`, :data:`MAX_FILTER_CONDITIONS`
    conditions, :data:`MAX_FILTER_IN` elements in an ``$in``/``$nin``,
    :data:`MAX_PATH_SEGMENTS` path segments, :data:`MAX_FILTER_BYTES` bytes of
    ``jsonb`` text (:func:`jsonb_text_bytes`).
    """
    if filter is None:
        return None
    loaded = load_json(json_text(filter, "filter", InvalidFilterError))
    if not isinstance(loaded, dict):
        raise InvalidFilterError(f"filter: the filter must be a JSON object, got {_kind(loaded)}")
    size = jsonb_text_bytes(loaded)
    if size > MAX_FILTER_BYTES:
        raise InvalidFilterError(f"filter: {size} bytes of JSON, over the {MAX_FILTER_BYTES}-byte cap")
    _Checker().filter(loaded, "filter", 1)
    return loaded


def is_containment(filter: dict[str, Any] | None) -> bool:
    """Whether a checked filter means exactly ``metadata @> filter``: no logic, no operator object, no dotted path.

    ``rag_query_v1`` and ``rag_lexical_query_v1`` read such a filter with ``@>``
    (through the GIN index, as before the language existed); any other goes as ``@@``.
    """
    return filter is not None and all(
        not key.startswith("$")
        and "." not in key
        and not (isinstance(value, dict) and any(item.startswith("$") for item in value))
        for key, value in filter.items()
    )


def matches(filter: dict[str, Any] | None, metadata: Any) -> bool:
    """Whether ``metadata`` (loaded JSON, normally an object) satisfies ``filter`` (``None`` matches everything).

    ``filter`` must be one :func:`check_filter` returned: an unchecked one may
    raise anything. The answer is ``metadata @@ metadata_filter_v1(filter)``'s.
    """
    return filter is None or _matches(filter, metadata)


def _matches(node: dict[str, Any], document: Any) -> bool:
    for key, condition in node.items():
        if key == "$and":
            held = all(_matches(item, document) for item in condition)
        elif key == "$or":
            held = any(_matches(item, document) for item in condition)
        elif key == "$not":
            held = not _matches(condition, document)
        else:
            held = _holds(_lookup(document, key.split(".")), condition)
        if not held:
            return False
    return True


def _lookup(document: Any, segments: Iterable[str]) -> Any:
    """The value at a path, or :data:`_MISSING` when a segment is absent or its parent is not an object."""
    value = document
    for segment in segments:
        if not isinstance(value, dict) or segment not in value:
            return _MISSING
        value = value[segment]
    return value


def _holds(value: Any, condition: Any) -> bool:
    if _is_scalar(condition):
        return _equal(value, condition)
    if isinstance(condition, dict) and condition and all(key.startswith("$") for key in condition):
        return all(_operator(value, operator, operand) for operator, operand in condition.items())
    return value is not _MISSING and json_contains(value, condition)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return _equal(value, operand)
    if operator == "$ne":
        return not _equal(value, operand)
    if operator in _ORDER:
        return _ordered(value, operator, operand)
    if operator == "$in":
        return any(_equal(value, item) for item in operand)
    if operator == "$nin":
        return not any(_equal(value, item) for item in operand)
    if operator == "$exists":
        return (value is not _MISSING) is operand
    return isinstance(value, list) and any(_equal(item, operand) for item in value)  # $contains


def _number(value: int | float) -> Decimal:
    """A JSON number's exact decimal value, as ``numeric`` holds the text it was sent as."""
    return Decimal(value) if isinstance(value, int) else Decimal(repr(value))


def _equal(stored: Any, wanted: Any) -> bool:
    """jsonpath ``==`` made two-valued: equal JSON type and value (a missing field, an array or an object is never equal)."""
    if stored is _MISSING:
        return False
    kind = _kind(stored)
    if kind != _kind(wanted):
        return False
    if kind == "number":
        return stored == wanted if type(stored) is type(wanted) else _number(stored) == _number(wanted)
    return kind not in ("array", "object") and stored == wanted


def _ordered(stored: Any, operator: str, wanted: Any) -> bool:
    """jsonpath ``> >= < <=`` made two-valued: numbers with numbers, strings with strings (by code point), else false."""
    if stored is _MISSING:
        return False
    kind = _kind(stored)
    if kind != _kind(wanted) or kind not in ("number", "string"):
        return False
    if kind == "number" and type(stored) is not type(wanted):
        stored, wanted = _number(stored), _number(wanted)
    if operator == "$gt":
        return stored > wanted
    if operator == "$gte":
        return stored >= wanted
    if operator == "$lt":
        return stored < wanted
    return stored <= wanted


def json_contains(stored: Any, wanted: Any) -> bool:
    """``stored @> wanted`` for ``jsonb`` values below the top level (where a scalar never matches an array).

    An object contains an object holding a subset of its keys, each value
    contained recursively; an array contains an array each of whose elements
    is contained in some element of it; a scalar contains only an equal
    scalar (JSON-typed: ``1 == 1.0``, ``true != 1``).
    """
    if isinstance(wanted, dict):
        return isinstance(stored, dict) and all(key in stored and json_contains(stored[key], value) for key, value in wanted.items())
    if isinstance(wanted, list):
        return isinstance(stored, list) and all(any(json_contains(item, element) for item in stored) for element in wanted)
    return _is_scalar(stored) and _equal(stored, wanted)
