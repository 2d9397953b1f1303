"""Structured numpy dtypes as text, for NDARRAY and NUMPY_SCALAR values.

A plain dtype travels as its ``dtype.str`` (``<f8``). A structured one travels as JSON of
numpy's own ``descr`` form (what ``.npy`` files store), which ``json`` parses without running
anything, unlike the ``repr`` that ``.npy`` headers use. The extension calls these only for
structured dtypes; numpy is imported by the caller's array, never by these functions.
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["MAX_TEXT", "structured_dtype", "structured_text"]

# Longest structured dtype text, in bytes (the spec's limit).
MAX_TEXT = 4096


def _format() -> Any:
    numpy = sys.modules["numpy"]
    return numpy.lib.format


def structured_text(dtype: Any) -> str:
    """The text for a structured dtype; TypeError if it holds Python objects or is too long."""
    if dtype.hasobject:
        raise TypeError(f"numpy dtype {dtype} holds Python objects, which amber cannot write")
    text = json.dumps(_format().dtype_to_descr(dtype), separators=(",", ":"))
    if len(text) > MAX_TEXT:
        raise TypeError(f"numpy dtype {dtype} takes {len(text)} bytes as text; at most {MAX_TEXT}")
    return text


def _field(item: Any) -> tuple[Any, ...]:
    if not isinstance(item, list) or len(item) not in (2, 3):
        raise ValueError(f"a field must be [name, format] or [name, format, shape], not {item!r}")
    name, fmt, *shape = item
    if isinstance(name, list):
        if len(name) != 2 or not all(isinstance(n, str) for n in name):
            raise ValueError(f"a titled field name must be [title, name], not {name!r}")
        name = tuple(name)
    elif not isinstance(name, str):
        raise ValueError(f"a field name must be a string, not {name!r}")
    if isinstance(fmt, list):
        fmt = [_field(f) for f in fmt]
    elif not isinstance(fmt, str):
        raise ValueError(f"a field format must be a dtype string or a field list, not {fmt!r}")
    if shape:
        dims = shape[0]
        if not isinstance(dims, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**31 for d in dims
        ):
            raise ValueError(f"a field shape must be a list of sizes, not {dims!r}")
        return (name, fmt, tuple(dims))
    return (name, fmt)


def structured_dtype(text: str) -> Any:
    """The dtype a ``structured_text`` result describes; ValueError for anything else."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"structured dtype text is longer than {MAX_TEXT} bytes")
    try:
        descr = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"structured dtype text is not JSON: {exc}") from None
    if not isinstance(descr, list) or not descr:
        raise ValueError("a structured dtype is a non-empty list of fields")
    fields = [_field(item) for item in descr]
    try:
        dtype = _format().descr_to_dtype(fields)
    except (TypeError, ValueError, KeyError, RecursionError) as exc:
        raise ValueError(f"numpy refuses the structured dtype: {exc}") from None
    if dtype.hasobject:
        raise ValueError("the structured dtype holds Python objects")
    if structured_text(dtype) != text:
        raise ValueError("the structured dtype text is not in numpy's canonical form")
    return dtype
