"""`key=value` lines from a device, as a nested mapping: `a.b.c=v` nests, finite numbers become numbers.

What describe.sh prints (device facts, facts.py) and what control commands print (run/device/controls.py)
read the same way. A device's output is not trusted: lines without `=` are skipped, a key that
would nest under a value already given is dropped, and a value that reads as a number beyond
64 bits, or as nan or inf, stays text (JSON, the manifest and the store, hold no NaN, and SQLite no
integer past 64 bits).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

KeyPath = tuple[str, ...]
_NUMBER_MAX = 2**63 - 1


def parse_key_values(text: str) -> dict[str, Any]:
    """Parse `key=value` lines (see the module docstring)."""
    pairs = []
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key:
            pairs.append((tuple(key.strip().split(".")), number_or_text(value.strip())))
    return nest(pairs)


def number_or_text(value: str) -> int | float | str:
    """The value as a finite number when it reads as one within 64 bits, else the text itself."""
    for cast in (int, float):
        try:
            number = cast(value)
        except ValueError:
            continue
        return number if math.isfinite(number) and abs(number) <= _NUMBER_MAX else value
    return value


def nest(pairs: Iterable[tuple[KeyPath, Any]]) -> dict[str, Any]:
    """A nested mapping from (key path, value) pairs, in their order; a pair that would nest under a value
    already set is dropped (the first one wins the place)."""
    out: dict[str, Any] = {}
    for path, value in pairs:
        node = out
        *parents, leaf = path
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                break
            node = child
        else:
            node[leaf] = value
    return out


def leaves(mapping: Mapping[str, Any], prefix: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """The (key path, value) pairs of a nested mapping, in its order: `nest`'s inverse (an empty mapping is a
    value of its own, so that nothing is lost)."""
    for key, value in mapping.items():
        if isinstance(value, Mapping) and value:
            yield from leaves(value, (*prefix, str(key)))
        else:
            yield (*prefix, str(key)), value


def sorted_keys(value: Any) -> Any:
    """`value` with every mapping in it in sorted key order, as the manifest writes it (json `sort_keys`)."""
    if isinstance(value, Mapping):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [sorted_keys(item) for item in value]
    return value
