"""Which op feeds which in the ETRecord's edge graph, by debug handle, without torch.

Kernel mapping needs it for the ops the XNNPACK lowering folded into another node and so did
not serialize (a ReLU or batch norm folded into the convolution before it, the dequantize of a
weight into the convolution after it): those handles appear in the delegate's
`debug_handle_map` entry but on no XNode, and they belong to the kernel their neighbour ran.

The edge program is torch.export's JSON serde form (see etrecord.py): each node lists the
tensors it reads (`as_tensor`/`as_tensors` anywhere in its inputs) and writes (its outputs).
Nodes without a debug handle (`getitem` of a tuple) pass their inputs' producers through.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass
from typing import Any

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.etrecord import EDGE_PROGRAM, ETRECORD_IDENTIFIER, FORWARD, read_member
from orchestrator.profiles.file_memo import FileMemo, file_key


@dataclass(frozen=True)
class EdgeFlow:
    """Per debug handle, the handles whose outputs it reads and the handles that read its outputs."""

    producers: dict[int, tuple[int, ...]]
    consumers: dict[int, tuple[int, ...]]


_FLOWS: FileMemo[EdgeFlow] = FileMemo()


def clear_cache() -> None:
    _FLOWS.clear()


def load_edge_flow(path: str | os.PathLike[str]) -> EdgeFlow:
    """The data flow of an ETRecord's edge program (kept while the file is unchanged)."""
    return _FLOWS.get([file_key(path, "ETRecord file")], lambda: edge_flow(_program(str(path))))


def _program(name: str) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(name) as zf:
            members = set(zf.namelist())
            if ETRECORD_IDENTIFIER not in members:
                raise AnalysisError(f"{name}: not an ETRecord (no {ETRECORD_IDENTIFIER} member)")
            member = next((m for m in (f"{EDGE_PROGRAM}/{FORWARD}", EDGE_PROGRAM) if m in members), None)
            if member is None:
                raise AnalysisError(f"{name}: ETRecord has no edge program")
            program = json.loads(read_member(zf, member, name))
    except zipfile.BadZipFile:
        raise AnalysisError(f"{name}: not an ETRecord (not a zip file)") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{name}: cannot read the ETRecord's edge program: {exc}") from None
    if not isinstance(program, dict):
        raise AnalysisError(f"{name}: unexpected edge program layout in ETRecord")
    return program


def edge_flow(program: dict[str, Any]) -> EdgeFlow:
    """Producer and consumer handles of every node with a debug handle, in graph order."""
    made_by: dict[str, frozenset[int]] = {}  # tensor name -> handles that produced it
    producers: dict[int, dict[int, None]] = {}
    try:
        nodes = program["graph_module"]["graph"].get("nodes", [])
    except (KeyError, TypeError, AttributeError):
        return EdgeFlow({}, {})
    for node in nodes:
        if not isinstance(node, dict):
            continue
        reads = frozenset(h for tensor in _tensors(node.get("inputs")) for h in made_by.get(tensor, ()))
        handle_text = (node.get("metadata") or {}).get("debug_handle")
        handle = int(handle_text) if isinstance(handle_text, str) and handle_text.isdigit() else None
        if handle is not None:
            producers.setdefault(handle, {}).update(dict.fromkeys(sorted(reads - {handle})))
        made = frozenset({handle}) if handle is not None else reads
        for tensor in _tensors(node.get("outputs")):
            made_by[tensor] = made
    consumers: dict[int, dict[int, None]] = {}
    for handle, sources in producers.items():
        for source in sources:
            consumers.setdefault(source, {})[handle] = None
    return EdgeFlow({h: tuple(p) for h, p in producers.items()}, {h: tuple(c) for h, c in consumers.items()})


def _tensors(value: Any) -> list[str]:
    """Names of every tensor argument in a serialized node's inputs or outputs."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            tensor = item.get("as_tensor")
            if isinstance(tensor, dict) and isinstance(tensor.get("name"), str):
                out.append(tensor["name"])
            tensors = item.get("as_tensors")
            if isinstance(tensors, list):
                out.extend(t["name"] for t in tensors if isinstance(t, dict) and isinstance(t.get("name"), str))
            stack.extend(v for k, v in item.items() if k not in ("as_tensor", "as_tensors") and isinstance(v, (dict, list)))
    return out
