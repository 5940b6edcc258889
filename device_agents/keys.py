"""One device's entry of the inventory file, read key by key with one-line errors.

The inventory parser (orchestrator/config.py) reads the keys every device has; each transport's
settings type reads its own (`TransportSettings.parse`) through the same typed look-ups, so every
transport's errors name the file and the key alike (`devices.yaml: devices.rpi5.port: expected an
integer, got str 'abc'`). A key that is absent or null takes its default; `required` makes that
an error instead. See docs/architecture.md, "Device inventory".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.base.errors import ConfigError
from orchestrator.base.yamlfile import shorten

_KINDS = {int: "an integer", float: "a number", str: "a string"}


def describe(value: Any) -> str:
    """How an error shows a value from the file: its type and a shortened repr."""
    return "nothing" if value is None else f"{type(value).__name__} {shorten(repr(value))}"


@dataclass(frozen=True)
class InventoryEntry:
    """The mapping of one device in the inventory file `path`."""

    path: Path
    device: str
    values: Mapping[str, Any]

    @property
    def where(self) -> str:
        """The device's key path in the file: `devices.NAME`."""
        return f"devices.{shorten(self.device, 40)}"

    def error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(self.path, f"{self.where}.{key}", problem)

    def given(self, key: str) -> Any:
        """The key's value as written (None when absent or null)."""
        return self.values.get(key)

    def text(self, key: str, default: str | None = None) -> str | None:
        return self._typed(key, str, default, False)

    def required_text(self, key: str) -> str:
        """A string the entry must have: absent or null is `missing (required)`."""
        return self._typed(key, str, None, True)

    def integer(self, key: str, default: int, least: int | None = None, most: int | None = None) -> int:
        value = self._typed(key, int, default, False)
        if (least is not None and value < least) or (most is not None and value > most):
            raise self.error(key, f"expected an integer from {least} to {most}, got {describe(self.given(key))}")
        return value

    def port(self, key: str, default: int) -> int:
        """A TCP port: an integer in 1..65535."""
        value = self._typed(key, int, default, False)
        if not 0 < value < 65536:
            raise self.error(key, f"port out of range: {value}")
        return value

    def seconds(self, key: str, default: float, most: float = 86_400.0) -> float:
        """A duration: a number > 0 (a deadline of 0 or less would never let a device answer), finite and at
        most `most` (a day: `.inf` or `.nan` would overflow the clocks it is added to)."""
        value = self._typed(key, float, default, False)
        if value <= 0:
            raise self.error(key, f"expected a number of seconds > 0, got {describe(self.given(key))}")
        if not value <= most:  # also refuses nan
            raise self.error(key, f"expected at most {most:g} seconds, got {describe(self.given(key))}")
        return value

    def _typed(self, key: str, kind: type, default: Any, required: bool) -> Any:
        value = self.values.get(key)
        if value is None:
            if required:
                raise self.error(key, "missing (required)")
            return default
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self.error(key, f"expected {_KINDS[kind]}, got {describe(value)}")
        return value
