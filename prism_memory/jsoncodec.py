"""Text and JSON as Postgres stores them: the codec both backends share.

Postgres ``text`` holds valid UTF-8 without NUL, and ``jsonb`` holds JSON
values; psycopg cannot send a Python ``str`` with a lone surrogate, sends a
NUL only to have the server refuse it, and ``json.dumps`` would turn ``NaN``,
a ``set`` or an ``int`` key into something that is not the caller's JSON. So
these checks run in Python, before anything is sent; SQL never sees such a
value. Documents are encoded compactly (``ensure_ascii=False``) and read back
the way a ``jsonb`` round trip returns them (:func:`load_json`).
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from .errors import InvalidEntryError

#: Deepest nesting of objects/arrays accepted in metadata, working memory and filters
#: (a Python rule: Postgres accepts deeper documents).
MAX_JSON_DEPTH = 64


def text_bytes(value: str, what: str, error: type[Exception]) -> bytes:
    """``value`` as the UTF-8 bytes Postgres ``text`` stores.

    Raises ``error`` when ``value`` holds a lone surrogate (not UTF-8) or a
    NUL character (``text`` cannot store it).
    """
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{what} contains a lone surrogate and is not valid UTF-8") from exc
    if b"\x00" in encoded:
        raise error(f"{what} contains a NUL character, which Postgres text cannot store")
    return encoded


def check_storable_text(value: str, what: str, error: type[Exception]) -> None:
    """Raise as :func:`text_bytes` does, without building the bytes when ``value`` is plain ASCII (the common case)."""
    if "\x00" in value or not value.isascii():
        text_bytes(value, what, error)


def _check_json_value(value: object, where: str, error: type[Exception], depth: int) -> None:
    """Raise ``error`` unless ``value`` is JSON Postgres can store (see :func:`json_text`).

    Scalars inside a container are checked in place rather than by a call
    each: metadata is checked for every entry written.
    """
    if depth > MAX_JSON_DEPTH:
        raise error(f"{where} is nested deeper than {MAX_JSON_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    raise error(f"{where} has a non-string key {key!r}; JSON object keys are strings")
            if "\x00" in key or not key.isascii():
                text_bytes(key, f"{where} key {key[:40]!r}", error)
            _check_json_item(item, where, error, depth)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_json_item(item, where, error, depth)
    else:
        _check_json_item(value, where, error, depth - 1)


def _check_json_item(item: object, where: str, error: type[Exception], depth: int) -> None:
    """One value at ``depth + 1``: a scalar checked here, a container by :func:`_check_json_value`."""
    kind = type(item)
    if kind is str:
        if "\x00" in item or not item.isascii():  # type: ignore[operator, union-attr]
            text_bytes(item, where, error)  # type: ignore[arg-type]
    elif kind is int or kind is bool or item is None:
        pass
    elif kind is float:
        if not math.isfinite(item):  # type: ignore[arg-type]
            raise error(f"{where} holds a non-finite number {item!r}")
    elif isinstance(item, (dict, list, tuple)):
        _check_json_value(item, where, error, depth + 1)
    elif isinstance(item, str):
        text_bytes(item, where, error)
    elif isinstance(item, float):
        if not math.isfinite(item):
            raise error(f"{where} holds a non-finite number {item!r}")
    elif not isinstance(item, (bool, int)):
        raise error(f"{where} holds a {type(item).__name__}, which is not JSON")


def json_text(value: object, where: str, error: type[Exception]) -> str:
    """Any JSON value as its compact JSON text (what is sent as ``jsonb``).

    ``value`` may be a ``dict`` with string keys, ``list``/``tuple`` (stored as
    an array), ``str``, ``int``, finite ``float``, ``bool`` or ``None``, nested
    at most :data:`MAX_JSON_DEPTH` levels, with no NUL or lone surrogate in a
    string or key; anything else raises ``error``. Whether the value must be
    an object is the caller's rule (:func:`json_document`, or the SQL function).
    """
    _check_json_value(value, where, error, 1)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError as exc:  # an integer over Python's digit limit for int-to-text (4,300 digits by default)
        raise error(f"{where} holds an integer too long to write as JSON") from exc


def json_document(value: object, where: str, error: type[Exception] = InvalidEntryError) -> str:
    """A JSON object (metadata, working memory, a filter) as its compact JSON text.

    Raises ``error`` unless ``value`` is a ``dict`` that :func:`json_text` accepts.
    """
    if not isinstance(value, dict):
        raise error(f"{where} must be a JSON object (a dict), got {type(value).__name__}")
    return json_text(value, where, error)


def _jsonb_number(literal: str) -> int | float:
    """A JSON number as ``jsonb`` gives it back: it prints numbers without an exponent, so an integral
    one written with an exponent (``1e+16``) comes back as an integer; and ``numeric`` has no negative
    zero, so ``-0.0`` comes back as ``0.0``."""
    if "e" in literal or "E" in literal:
        exact = Decimal(literal)
        if exact == exact.to_integral_value():
            return int(exact)
    return float(literal) or 0.0


def load_json(document: str) -> Any:
    """Parse JSON text the way a ``jsonb`` round trip reads back (see :func:`_jsonb_number`)."""
    return json.loads(document, parse_float=_jsonb_number)
