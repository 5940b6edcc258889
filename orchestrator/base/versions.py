"""Versions of etfarm and of the ExecuTorch stack, from package metadata (never importing torch)."""

from __future__ import annotations

from importlib import metadata

from orchestrator import __version__

STACK = ("executorch", "torch")


def tool_versions() -> dict[str, str]:
    """{"torch": ..., "executorch": ...}; "absent" for a package that is not installed."""
    versions = {}
    for dist in STACK:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "absent"
    return versions


def version_line() -> str:
    stack = tool_versions()
    return f"etfarm {__version__} (executorch {stack['executorch']}, torch {stack['torch']})"
