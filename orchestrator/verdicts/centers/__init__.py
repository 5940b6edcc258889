"""The verdict statistics, one module each (mean.py, fast.py, fast_state.py), and their registry (base.py).

A new statistic is one module here: a `CenterStatistic` subclass decorated with `@register`. This package imports
every module of its own, so the statistic is then a choice of --center and of a plan's `center:`, named in
--help, the columns and the legend, and used by every estimate (statistics.py asks the registry, never a name).
"""

from __future__ import annotations

import importlib
import pkgutil

from orchestrator.verdicts.centers.base import CenterStatistic, find, register, registered, unregister


def discover() -> None:
    """Import every module of this package (each registers its statistic; a module imported twice registers once)."""
    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


discover()

__all__ = ["CenterStatistic", "discover", "find", "register", "registered", "unregister"]
