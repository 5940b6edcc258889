"""Reading the user's YAML files (device inventory, nightly plans) strictly and safely.

`yaml.safe_load` alone accepts a key written twice (the last one silently wins), expands
"billion laughs" alias bombs, and prints whatever a file holds in an error. Here a duplicate
key is an error naming both lines, aliases are limited, the file must be UTF-8 and small, and
values quoted back in messages are cut to a sane length.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.base.errors import ConfigError, not_a_file

MAX_FILE_BYTES = 1 << 20  # an inventory or plan is a few kB
MAX_ALIASES = 100  # anchors are handy; hundreds of them are an attack
MAX_SHOWN_CHARS = 80
MAX_NUMBER_CHARS = 40  # a count, port or ratio is a few digits; 5000 of them are no number etfarm takes


def load_yaml(path: Path) -> Any:
    """The parsed document; ConfigError naming the file (and line) for anything wrong."""
    import yaml

    raw = _read_file(path)
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(path, None, f"too large ({len(raw)} bytes; at most {MAX_FILE_BYTES})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, None, f"not UTF-8 text (byte {exc.start}: {raw[exc.start:exc.start + 1]!r})") from None
    try:
        return yaml.load(text, Loader=_strict_loader())  # noqa: S506 - a SafeLoader subclass
    except ConfigError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(path, where, f"not valid YAML ({shorten(problem)})") from None
    except _Refused as exc:
        raise ConfigError(path, exc.where, exc.problem) from None


def _read_file(path: Path) -> bytes:
    """The file's bytes; a directory, a pipe or a device is named as what it is (a pipe would never end)."""
    if not path.is_file():
        raise ConfigError(path, None, not_a_file(path))
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(path, None, "no such file") from None
    except OSError as exc:
        raise ConfigError(path, None, f"cannot read: {exc.strerror or exc}") from None


def shorten(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """`value` as text for an error message, cut to `limit` characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Refused(Exception):
    def __init__(self, where: str | None, problem: str) -> None:
        super().__init__(problem)
        self.where = where
        self.problem = problem


_LOADER: type | None = None


def _short_number(node: Any) -> Any:
    """A number's node, refused when its text is longer than any number etfarm takes (Python would refuse a 5000-digit
    integer with a ValueError from inside the parser; a shorter one is range-checked where its key is read)."""
    if len(node.value) > MAX_NUMBER_CHARS:
        raise _Refused(f"line {node.start_mark.line + 1}", f"number {shorten(node.value, 24)} is {len(node.value)} "
                       f"characters long; no setting takes a number that large")
    return node


def _strict_loader() -> type:
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml
    from yaml.constructor import ConstructorError

    class StrictLoader(yaml.SafeLoader):
        aliases_seen = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.events.AliasEvent):
                self.aliases_seen += 1
                if self.aliases_seen > MAX_ALIASES:
                    line = self.peek_event().start_mark.line + 1
                    raise _Refused(f"line {line}", f"more than {MAX_ALIASES} aliases (an alias bomb?)")
            return super().compose_node(parent, index)

        def construct_yaml_int(self, node: Any) -> Any:
            return super().construct_yaml_int(_short_number(node))

        def construct_yaml_float(self, node: Any) -> Any:
            return super().construct_yaml_float(_short_number(node))

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if not isinstance(node, yaml.MappingNode):
                raise ConstructorError(None, None, f"expected a mapping, found {node.id}", node.start_mark)
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key: let SafeLoader report it
                    continue
                if first is not None:
                    raise _Refused(f"line {line}", f"duplicate key {shorten(key)!s} (first at line {first})")
                seen[key] = line
            return super().construct_mapping(node, deep=deep)

    StrictLoader.add_constructor("tag:yaml.org,2002:int", StrictLoader.construct_yaml_int)
    StrictLoader.add_constructor("tag:yaml.org,2002:float", StrictLoader.construct_yaml_float)
    _LOADER = StrictLoader
    return StrictLoader
