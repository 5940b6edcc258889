"""Frozen dataclasses to JSON-ready dicts and back, driven by `dataclasses.fields` and their types.

Every record etfarm writes as JSON is written out once, as dataclass fields: the results model
(results/model.py), the runner's result (run/runner_contract.py), a comparison and its verdicts
(verdicts/pair_verdicts.py: `compare --json`, verdicts.json), a night (results/night_marks.py: night.json),
the numerics report, a bisect's document, recipe.json and llm_reference.json; `encode` and `decode` derive
the dict from them, so a new field is declared once and reaches `manifest.json`, the store and `--json` by
itself. It sits in base/ so that every package, artifacts/ included, writes through it. Conversion follows
each field's annotation:

- `StrEnum` <-> its value; a nested dataclass <-> its dict; a tuple <-> a list; a class with a JSON form
  of its own (`to_json`, `from_json`: device facts and state, whose keys are the device's) <-> that form;
- `float | None`: a non-finite number is written and read as None (JSON has no NaN, and a
  device's NaN must not reach a manifest: docs/architecture.md, "Contracts"); a `float` that must be
  there (a sample of `execute_ms`) is never non-finite: writing or reading one is a ValueError;
- `bool`, `int`, `float`, `str` are checked on reading, not converted: a manifest saying
  `runs: "abc"`, `runs: 1e12` or `traced: "false"` is a ValueError naming the key path
  (`config.runs: expected a whole number, got '1e12'`), which the manifest reader reports as one line;
- `Mapping[...]` and `Any` are copied (controls, runner extras), a non-finite number in them
  written as None (in a JSON form of its own too); an `Any` holding a dataclass is encoded (a pair's
  series verdict, whose class sits above the pair's);
- the keys of a KEYED mapping (device and model names, which become paths) must be plain names.

A missing key takes the field's default; a field without one is required, except tuples and
mappings (empty) and nested dataclasses (read from `{}`). How a class lays its keys out is
its `LAYOUT` (a `Layout`): keys written `first` and `last` around the others (in declaration
order), the field that names it in its parent's mapping (`key`: left out of its own dict and
given back on reading), and `derived` figures written for readers and ignored on reading
(ModelResult's `summary`: a method or property, or a (key, attribute) pair when the key is not its
name; the attribute may be a dotted path, `estimate.p_value`; a dataclass it gives is encoded, an enum
written as its value, a tuple as a list), and `order`, when given, the whole order of the keys (figures
and derived ones among them, as `compare --json` prints them). `raw_floats` writes a `float` as it is, NaN included (a verdict's
statistic with nothing to divide by: the file writer makes it null, `cache.write_json_atomic`), and
reads null back as NaN. `strict` makes every field without a default required, tuples, mappings and nested
dataclasses included (what a peer writes, the runner's `llm` object: a missing list is a broken runner, not an
older manifest).
Field metadata says how one field is written: `KEYED` (a tuple of dataclasses written as a mapping by
their `name`), `FLAT` (a dataclass whose keys are merged into its parent's, after the parent's own),
`PAIRS` (a tuple of (name, value) pairs written as a mapping: a configuration's settings),
`NAN_NULL` (a `float` whose NaN means "unknown": written null even in a `raw_floats` class, read back
as NaN), `SKIP` (a field not written, read as its default: a run directory a verdict keeps for links, or a
field a derived figure shows in another shape; a record whose JSON is such a view is written, never read), and
`named(key)` the JSON key of a field whose Python name differs (read back by that key too).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any, TypeVar

from orchestrator.base.cache import finite_json
from orchestrator.base.names import is_plain_name

T = TypeVar("T")
KEYED: Mapping[str, Any] = types.MappingProxyType({"codec": "keyed"})
FLAT: Mapping[str, Any] = types.MappingProxyType({"codec": "flat"})
PAIRS: Mapping[str, Any] = types.MappingProxyType({"codec": "pairs"})
NAN_NULL: Mapping[str, Any] = types.MappingProxyType({"nan": "null"})
SKIP: Mapping[str, Any] = types.MappingProxyType({"codec": "skip"})
_MISSING = dataclasses.MISSING


@dataclass(frozen=True)
class Layout:
    """Where a class's keys go: see the module docstring."""

    first: tuple[str, ...] = ()
    last: tuple[str, ...] = ()
    key: str | None = None
    derived: tuple[str | tuple[str, str], ...] = ()
    order: tuple[str, ...] = ()
    raw_floats: bool = False
    strict: bool = False


def named(key: str, *more: Mapping[str, Any]) -> Mapping[str, Any]:
    """Field metadata: the field's JSON key is `key` (merged with other metadata, e.g. `PAIRS`)."""
    return types.MappingProxyType({k: v for m in more for k, v in m.items()} | {"json": key})


_PLAIN = Layout()


@dataclass(frozen=True)
class _Field:
    name: str
    write: Callable[[Any], Any]
    read: Callable[[Any], Any]
    mode: str  # "plain", "keyed", "flat", "skip"
    required: bool
    empty: Callable[[], Any] | None  # the value of a missing required key, None: the key is required
    item: type | None = None  # keyed: the item class
    key: str = ""  # its JSON key ("": its name)

    @property
    def json(self) -> str:
        return self.key or self.name


def encode(obj: Any) -> dict[str, Any]:
    """A dataclass instance as a JSON-ready dict, keys laid out by its class's LAYOUT."""
    cls = type(obj)
    layout = _layout(cls)
    out: dict[str, Any] = {}
    flat: list[dict[str, Any]] = []
    for f in _fields(cls):
        value = getattr(obj, f.name)
        if f.mode == "skip":
            continue
        if f.mode == "flat":
            flat.append(encode(value))
        elif f.mode == "keyed":
            out[f.json] = {item.name: encode(item) for item in value}
        else:
            out[f.json] = f.write(value)
    for extra in flat:
        out.update(extra)
    for derived in layout.derived:
        key, attribute = (derived, derived) if isinstance(derived, str) else derived
        value = operator.attrgetter(attribute)(obj)
        out[key] = _free(value() if callable(value) else value, finite=False)
    if layout.order:
        out = {**{k: out[k] for k in layout.order if k in out}, **out}
    return out


class FieldError(ValueError):
    """A value `decode` cannot take, with the key path to it (`devices.local.models.m.runs.run-1.execute_ms`)."""

    def __init__(self, path: tuple[str, ...], problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{'.'.join(path)}: {problem}" if path else problem)

    def under(self, key: str) -> FieldError:
        return FieldError((key, *self.path), self.problem)


def decode(cls: type[T], data: Mapping[str, Any], **given: Any) -> T:
    """An instance of `cls` from a dict written by `encode` (unknown keys are ignored); `given`
    supplies fields that are not in `data` (the name a parent's mapping keyed it by). A value of the
    wrong type or out of its bounds is a FieldError (a ValueError) naming its key path."""
    if not isinstance(data, Mapping):
        raise FieldError((), f"expected a mapping, got {_shown(data)}")
    values: dict[str, Any] = dict(given)
    for f in _fields(cls):
        if f.name in values or f.mode == "skip":
            continue
        if f.mode == "flat":
            values[f.name] = decode(_hints(cls)[f.name], data)
        elif f.json in data:
            raw = data[f.json]
            try:
                values[f.name] = _read_keyed(f, raw) if f.mode == "keyed" else f.read(raw)
            except FieldError as exc:
                raise exc.under(f.json) from None
            except (TypeError, ValueError, KeyError, AttributeError) as exc:
                raise FieldError((f.json,), str(exc)) from None
        elif f.required:
            if f.empty is None:
                raise FieldError((f.json,), "missing")
            values[f.name] = f.empty()
    try:
        return cls(**values)
    except FieldError:
        raise
    except (TypeError, ValueError) as exc:  # the class's own checks (JobOptions' bounds) name the field
        raise FieldError((), str(exc)) from None


def _read_keyed(f: _Field, raw: Any) -> tuple[Any, ...]:
    item = typing.cast(type, f.item)
    key = _layout(item).key
    if not isinstance(raw or {}, Mapping):
        raise FieldError((), f"expected a mapping, got {_shown(raw)}")
    out = []
    for k, v in (raw or {}).items():
        if not isinstance(k, str) or not is_plain_name(k):  # device and model names become paths
            raise FieldError((), f"{_shown(k)} is not a plain name (letters, digits, '.', '_', '-'; at most 100; or adb:SERIAL)")
        try:
            out.append(decode(item, v, **({key: k} if key else {})))
        except FieldError as exc:
            raise exc.under(str(k)) from None
    return tuple(out)


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
    plans = {f.name: _plan(f, hints[f.name], layout.raw_floats) for f in dataclasses.fields(cls) if f.name != layout.key}
    if layout.strict:
        plans = {n: dataclasses.replace(p, empty=None) if p.required else p for n, p in plans.items()}
    first = [plans[n] for n in layout.first]
    last = [plans[n] for n in layout.last]
    middle = [p for n, p in plans.items() if n not in layout.first and n not in layout.last]
    return tuple(first + middle + last)


def _plan(f: dataclasses.Field[Any], tp: Any, raw_floats: bool = False) -> _Field:
    required = f.default is _MISSING and f.default_factory is _MISSING
    mode = f.metadata.get("codec", "plain")
    key = f.metadata.get("json", "")
    if mode == "skip":
        return _Field(f.name, _identity, _identity, mode, False, None, key=key)
    if mode == "keyed":
        return _Field(f.name, _identity, _identity, mode, required, tuple, item=typing.get_args(tp)[0], key=key)
    if mode == "pairs":  # ((name, value), ...) <-> {name: value}
        return _Field(f.name, dict, lambda v: tuple((str(k), str(x)) for k, x in _mapping(v).items()), "plain",
                      required, tuple, key=key)
    write, read, empty = _converters(tp)
    if tp is float and (raw_floats or f.metadata.get("nan") == "null"):
        read = _raw_float
        write = _identity if f.metadata.get("nan") != "null" else (lambda v: None if math.isnan(v) else v)
    return _Field(f.name, write, read, mode, required, empty, key=key)


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
        return write, (lambda v: tuple(item_read(x) for x in _sequence(v))), tuple
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return _plain_mapping, (lambda v: dict(_mapping(v))), dict
    if isinstance(tp, type) and hasattr(tp, "to_json") and hasattr(tp, "from_json"):  # a JSON form of its own
        return (lambda v: finite_json(v.to_json())), (lambda v: tp.from_json(_mapping(v))), tp
    if dataclasses.is_dataclass(tp):
        return encode, (lambda v: decode(tp, v or {})), (lambda: decode(tp, {}))
    if isinstance(tp, type) and issubclass(tp, Enum):
        return (lambda v: v.value), tp, None
    if tp is float:
        return _finite, _finite, None
    if tp in (bool, int, str):
        return _identity, _checked(tp), None
    return _free, _identity, None  # Any: a free-form value (a runner's extras)


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


_KIND_NAMES = {bool: "true or false", int: "a whole number", str: "a string"}
_WHOLE = re.compile(r"^[+-]?[0-9]{1,30}$")
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1  # what the results store (SQLite INTEGER) holds: a larger one is no count


def _checked(kind: type) -> Callable[[Any], Any]:
    """The reader of a `bool`, `int` or `str`: the value if it is one, or what it says without loss (older
    manifests: `traced: 1`, `peak_rss_kb: "12"`, `runs: 2.0`); anything else is a FieldError."""
    def read(value: Any) -> Any:
        if kind is bool:
            if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
                return bool(value)
        elif kind is int:
            whole = _whole(value)
            if whole is not None:
                if not _INT_MIN <= whole <= _INT_MAX:
                    raise FieldError((), f"{_shown(value)} is out of range (a whole number of at most 64 bits)")
                return whole
        elif isinstance(value, str):
            return value
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return str(value)
        raise FieldError((), f"expected {_KIND_NAMES[kind]}, got {_shown(value)}")

    return read


def _whole(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _WHOLE.match(value.strip()):
        return int(value)
    return None


def _finite(value: Any) -> float:
    """A number that must be there and be finite (read and written alike; a numeric string is read)."""
    number = value
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value)
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
        raise FieldError((), f"expected a finite number, got {_shown(value)}")
    return float(number)


def _raw_float(value: Any) -> float:
    """A `raw_floats` class's float: NaN as written in memory, or null as the file writer made it, is NaN."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return math.nan if value is None else value
    return _finite(value)


def _sequence(value: Any) -> Any:
    if not value and isinstance(value, (type(None), Mapping, str)):  # null, {} or "" written for "none"
        return ()
    if not isinstance(value, (list, tuple)):
        raise FieldError((), f"expected a list, got {_shown(value)}")
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    if not value and isinstance(value, (type(None), list, str)):  # null, [] or "" written for "none"
        return {}
    if not isinstance(value, Mapping):
        raise FieldError((), f"expected a mapping, got {_shown(value)}")
    return value


def _free(value: Any, finite: bool = True) -> Any:
    """A free-form value (an `Any` field, a derived figure): a dataclass encoded, else as it is (a non-finite number
    None when `finite`: a derived figure is written as the class computes it, NaN included, as `raw_floats`)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return encode(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple):
        return [_free(v, finite) for v in value]
    return finite_json(value) if finite else value


def _plain_mapping(value: Mapping[str, Any]) -> dict[str, Any]:
    return typing.cast(dict[str, Any], finite_json(dict(value)))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _identity(value: Any) -> Any:
    return value

