"""Conversion between google.protobuf.Struct and plain Python dicts (JSON semantics)."""

from __future__ import annotations

import math
from typing import Any

from google.protobuf import struct_pb2

_MAX_SAFE_INT = 2**53


def to_struct(value: dict[str, Any] | None) -> struct_pb2.Struct:
    """A Struct holding the JSON-compatible dict (None gives an empty Struct)."""
    out = struct_pb2.Struct()
    if value:
        if not isinstance(value, dict):
            raise TypeError(f"expected a dict of JSON values, got {type(value).__name__}")
        out.update(value)
    return out


def from_struct(struct: struct_pb2.Struct | None) -> dict[str, Any]:
    """The Struct as a dict; whole numbers come back as int, as JSON.parse gives them in JS."""
    if struct is None:
        return {}
    return {key: _from_value(v) for key, v in struct.fields.items()}


def _from_value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        return from_struct(value.struct_value)
    if kind == "list_value":
        return [_from_value(v) for v in value.list_value.values]
    if kind == "number_value":
        n = value.number_value
        if math.isfinite(n) and n.is_integer() and abs(n) <= _MAX_SAFE_INT:
            return int(n)
        return n
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    return None
