"""Lazy package APIs (PEP 562): a subpackage names its public API without importing it.

`etfarm --help` must not pay for pandas or numpy because `orchestrator.run` re-exports something
that imports them; so each subpackage's `__init__` maps public names to the module that defines
them, and a name is imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_api(package: str, api: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `package.<api[name]>` on first use of `name`."""

    def getattr_(name: str) -> Any:
        module = api.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # a module of the package, or (a full name) one of a lower layer that the package re-exports
        return getattr(importlib.import_module(module if module.startswith("orchestrator.") else f"{package}.{module}"),
                       name)

    return getattr_
