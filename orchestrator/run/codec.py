"""Frozen dataclasses to JSON-ready dicts and back, driven by `dataclasses.fields` and their types.

The results model (results.py) and the runner's result (runner_contract.py) are written out
once, as dataclass fields; `encode` and `decode` derive the dict from them, so a new field is
declared once and reaches `manifest.json`, the store and `--json` by itself. Conversion follows
each field's annotation:

- `StrEnum` <-> its value; a nested dataclass <-> its dict; a tuple <-> a list;
- `float | None`: a non-finite number is written and read as None (JSON has no NaN, and a
  device's NaN must not reach a manifest: docs/architecture.md, "Contracts");
- `bool`, `int`, `float`, `str` are converted on reading (a malformed value raises
  ValueError/TypeError, which the manifest reader reports as one line);
- `Mapping[...]` and `Any` are copied verbatim (device facts, runner extras).

A missing key takes the field's default; a field without one is required, except tuples and
mappings (empty) and nested dataclasses (read from `{}`). How a class lays its keys out is
its `LAYOUT` (a `Layout`): keys written `first` and `last` around the others (in declaration
order), the field that names it in its parent's mapping (`key`: left out of its own dict and
given back on reading), and `derived` figures written for readers and ignored on reading
(ModelResult's `summary`). Field metadata says how one field is written: `KEYED` (a tuple of
dataclasses written as a mapping by their `name`) or `FLAT` (a dataclass whose keys are merged
into its parent's, after the parent's own).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")
KEYED: Mapping[str, Any] = types.MappingProxyType({"codec": "keyed"})
FLAT: Mapping[str, Any] = types.MappingProxyType({"codec": "flat"})
_MISSING = dataclasses.MISSING


@dataclass(frozen=True)
class Layout:
    """Where a class's keys go: see the module docstring."""

    first: tuple[str, ...] = ()
    last: tuple[str, ...] = ()
    key: str | None = None
    derived: tuple[str, ...] = ()


_PLAIN = Layout()


@dataclass(frozen=True)
class _Field:
    name: str
    write: Callable[[Any], Any]
    read: Callable[[Any], Any]
    mode: str  # "plain", "keyed", "flat"
    required: bool
    empty: Callable[[], Any] | None  # the value of a missing required key, None: the key is required
    item: type | None = None  # keyed: the item class


def encode(obj: Any) -> dict[str, Any]:
    """A dataclass instance as a JSON-ready dict, keys laid out by its class's LAYOUT."""
    cls = type(obj)
    layout = _layout(cls)
    out: dict[str, Any] = {}
    flat: list[dict[str, Any]] = []
    for f in _fields(cls):
        value = getattr(obj, f.name)
        if f.mode == "flat":
            flat.append(encode(value))
        elif f.mode == "keyed":
            out[f.name] = {item.name: encode(item) for item in value}
        else:
            out[f.name] = f.write(value)
    for extra in flat:
        out.update(extra)
    for name in layout.derived:
        out[name] = getattr(obj, name)()
    return out


def decode(cls: type[T], data: Mapping[str, Any], **given: Any) -> T:
    """An instance of `cls` from a dict written by `encode` (unknown keys are ignored); `given`
    supplies fields that are not in `data` (the name a parent's mapping keyed it by)."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{cls.__name__}: expected a mapping, got {type(data).__name__}")
    values: dict[str, Any] = dict(given)
    for f in _fields(cls):
        if f.name in values:
            continue
        if f.mode == "flat":
            values[f.name] = decode(_hints(cls)[f.name], data)
        elif f.name in data:
            raw = data[f.name]
            values[f.name] = _read_keyed(f, raw) if f.mode == "keyed" else f.read(raw)
        elif f.required:
            if f.empty is None:
                raise KeyError(f.name)
            values[f.name] = f.empty()
    return cls(**values)


def _read_keyed(f: _Field, raw: Any) -> tuple[Any, ...]:
    item = typing.cast(type, f.item)
    key = _layout(item).key
    return tuple(decode(item, v, **({key: k} if key else {})) for k, v in (raw or {}).items())


# ---- per-class plans, built once -----------------------------------------------------------


def _layout(cls: type) -> Layout:
    return getattr(cls, "LAYOUT", _PLAIN)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def _fields(cls: type) -> tuple[_Field, ...]:
    """The fields `encode` writes, in the order it writes them (flat ones last, merged)."""
    layout = _layout(cls)
    hints = _hints(cls)
    plans = {f.name: _plan(f, hints[f.name]) for f in dataclasses.fields(cls) if f.name != layout.key}
    first = [plans[n] for n in layout.first]
    last = [plans[n] for n in layout.last]
    middle = [p for n, p in plans.items() if n not in layout.first and n not in layout.last]
    return tuple(first + middle + last)


def _plan(f: dataclasses.Field[Any], tp: Any) -> _Field:
    required = f.default is _MISSING and f.default_factory is _MISSING
    mode = f.metadata.get("codec", "plain")
    if mode == "keyed":
        return _Field(f.name, _identity, _identity, mode, required, tuple, item=typing.get_args(tp)[0])
    write, read, empty = _converters(tp)
    return _Field(f.name, write, read, mode, required, empty)


def _converters(tp: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[], Any] | None]:
    """(write, read, empty) for one annotation."""
    args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        return _optional(inner)
    if origin is tuple:
        item_write, item_read, _ = _converters(args[0])
        write = list if item_write is _identity else (lambda v: [item_write(x) for x in v])
        return write, (lambda v: tuple(item_read(x) for x in v or ())), tuple
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return dict, (lambda v: dict(v or {})), dict
    if dataclasses.is_dataclass(tp):
        return encode, (lambda v: decode(tp, v or {})), (lambda: decode(tp, {}))
    if isinstance(tp, type) and issubclass(tp, Enum):
        return (lambda v: v.value), tp, None
    if tp in (bool, int, float, str):
        return _identity, tp, None
    return _identity, _identity, None  # Any


def _optional(inner: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any], Callable[[], Any] | None]:
    write, read, _ = _converters(inner)
    if inner is float:
        return _finite_or_none, (lambda v: None if v is None else _finite_or_none(float(v))), None
    if dataclasses.is_dataclass(inner) or (isinstance(inner, type) and issubclass(inner, Enum)):
        # an empty value (`"flag": ""`, `"verification": {}`) is read as absent, as etfarm always did
        return (lambda v: None if v is None else write(v)), (lambda v: read(v) if v else None), None
    return (lambda v: None if v is None else write(v)), (lambda v: None if v is None else read(v)), None


def _finite_or_none(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def _identity(value: Any) -> Any:
    return value

