"""Where an event is in the user's model: its module path, its source line, and its short name in a table.

One home for what the event columns (analysis_core.py), the XNNPACK kernels' own columns
(kernel_map.py) and the printed tables and pages (report/) all say about an op's place in the
model: the deepest module several ops share (the common prefix of their module stacks), the
user's line in a stack trace, the `module{sub,...}` cell and the short op type names. Kept apart
from both of its readers in profiles/, so analysis_core can use kernel_map without a cycle.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

OP_TYPES_SEPARATOR = ";"  # op_types is a list in Inspector; a joined string keeps CSVs flat
MODULES_SEPARATOR = ";"  # delegate_covers: module paths
# Frames of a stack trace that are not the user's code: Python's own library and installed packages.
_LIBRARY_FRAME = re.compile(r"(/site-packages/|/dist-packages/|/lib/python\d[\d.]*/|^<)")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')

T = TypeVar("T")


def common_prefix(sequences: Iterable[Sequence[T]]) -> list[T]:
    """The longest run of leading items every sequence shares ([] when none, or no sequence)."""
    common: list[T] | None = None
    for other in sequences:
        if common is None:
            common = list(other)
            continue
        n = 0
        while n < min(len(common), len(other)) and common[n] == other[n]:
            n += 1
        common = common[:n]
    return common or []


def deepest_module(stacks: Iterable[Sequence[str]]) -> str:
    """The deepest module path shared by every op's module stack (outermost first); '' when none."""
    shared = common_prefix(stacks)
    return shared[-1] if shared else ""


def module_path(hierarchy: dict[str, Any]) -> str:
    """Deepest module shared by all ops of an event ('' when none): where in the model it is.
    `hierarchy`: per op, its module stack as the ETRecord gives it ({key: (path, type)}, outermost first)."""
    return deepest_module([str(entry[0]) for entry in stack.values()] if stack else [] for stack in hierarchy.values())


def source_line(stack_traces: dict[str, str | None]) -> str:
    """`file.py:line` of the user's code for the event's first op with a stack trace ('' when none).

    The innermost frame outside Python's library and installed packages (torch, executorch): the
    line of the user's model that made the op, e.g. `model.py:26` for `q = self.query(x)`."""
    for trace in stack_traces.values():
        if not trace:
            continue
        user = [(path, line) for path, line in _FRAME.findall(trace) if not _LIBRARY_FRAME.search(path)]
        if user:
            path, line = user[-1]
            return f"{os.path.basename(path)}:{line}"
    return ""


def op_where(module_path: Any, covers: Any) -> str:
    """Where an event is in the user's model: its module, e.g. `encoder.layers.0.attention{query,key}`.

    A delegate call shows its common module and, in braces, the submodules it covers (ancestors
    of another covered module left out); a kernel inside a delegate (no module of its own) shows
    `in` the delegate's modules; `(model)` is the top-level module itself."""
    module = module_path if isinstance(module_path, str) else ""
    modules = covers.split(MODULES_SEPARATOR) if isinstance(covers, str) and covers else []
    if not module and not modules:
        return ""
    prefix = ""
    if not module:
        module, prefix = ".".join(common_prefix(m.split(".") for m in modules)), "in "
    leaves = [m for m in modules if not any(o.startswith(m + ".") for o in modules)]
    inner = [m[len(module):].lstrip(".") for m in leaves if m != module and (not module or m.startswith(module + "."))]
    return prefix + (module or "(model)") + ("{" + ",".join(dict.fromkeys(inner)) + "}" if inner else "")


def short_op_types(op_types: Any) -> list[str]:
    """An event's op types, short and once each: 'aten.addmm.default;aten.permute_copy.default' -> addmm,
    permute_copy (other namespaces kept whole)."""
    if not isinstance(op_types, str) or not op_types:
        return []
    names = (t.split(".")[1] if t.startswith("aten.") and t.count(".") >= 2 else t for t in op_types.split(OP_TYPES_SEPARATOR))
    return list(dict.fromkeys(n for n in names if n))


def telling_source_lines(lines: Iterable[str | None]) -> bool:
    """Whether the source lines of a model's ops tell its layers apart: not one line for every op. A model built
    as one `nn.Sequential(...)` gives every op the call's line (tiny_cnn.py:28 for all): a column repeating it says
    nothing, so tables and pages show an op's line only where this holds (a line some ops lack tells them apart)."""
    return len({line or "" for line in lines}) > 1
