"""The A/B page's model diff in words (profiles/model_structure.py): ops added or removed, op counts, the layers whose
parameter or output shapes changed, parameter counts, dtypes and program size."""

from __future__ import annotations

from orchestrator.profiles.model_structure import StructureDiff
from orchestrator.report.formats import format_bytes
from orchestrator.report.model import PairStructure
from orchestrator.report.page.blocks import Text, code, joined, muted, strong, text

OPS_LISTED = 6


def model_diff_lines(s: PairStructure) -> list[Text]:
    """One line per kind of change of a pair's model, B against A; none when the model is the same."""
    d = s.model_diff
    if d is None:
        return []
    who = strong(f"{s.device} {s.model}")
    out = [text(who, ": ", *_sizes(d))] if _sizes(d) else []
    for label, ops in (("ops added", d.ops_added), ("ops removed", d.ops_removed)):
        if ops:
            more = f" and {len(ops) - OPS_LISTED} more" if len(ops) > OPS_LISTED else ""
            out.append(text(who, f": {label} ", joined([text(code(o)) for o in ops[:OPS_LISTED]]), more))
    if d.op_counts:
        out.append(text(who, ": op counts ", ", ".join(f"{op} {a} -> {b}" for op, a, b in d.op_counts)))
    for change in d.shapes:
        out.append(text(who, ": ", code(change.what), f" {change.a} -> {change.b}"))
    if d.shapes_more:
        out.append(text(who, muted(f": {d.shapes_more} more shape changes")))
    return out


def _sizes(d: StructureDiff) -> list[str]:
    """Parameter count, dtypes and program size where they changed."""
    (pa, pb), (da, db), (ba, bb) = d.parameters, d.dtypes, d.program_bytes
    parts = []
    if pa != pb:
        parts.append(f"parameters {pa:,} -> {pb:,}" + (f" ({pb / pa:.2f}x)" if pa else ""))
    if da != db:
        parts.append(f"dtypes {', '.join(da) or '-'} -> {', '.join(db) or '-'}")
    if ba is not None and bb is not None and ba != bb:
        parts.append(f"program {format_bytes(ba)} -> {format_bytes(bb)}")
    return ["; ".join(parts)] if parts else []
