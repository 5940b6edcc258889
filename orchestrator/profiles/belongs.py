"""Is an ETRecord (and a .pte) of the ETDump's program? Checked before its names are put on the ETDump's ops.

An ETDump event names its instruction (the position in the program's execution plan), not the
program; an ETRecord of another model links any instruction id it happens to have, and the
report then labels ops with the other model's layers and source lines. So, torch-free:

- every operator event's instruction must be one the ETRecord maps to debug handles, and a
  DELEGATE_CALL's must be one of its delegates;
- a portable kernel's event name says which op it ran (`native_call_addmm.out`): that op must be
  among the ops behind the instruction's debug handles. A few mismatches are tolerated (a kernel
  whose name differs from its edge op); most of them mean another program;
- with a .pte, every XNNPACK kernel event is checked by the kernel mapping (kernel_map.py):
  debug handles the ETRecord does not give the delegate, a delegate call the .pte does not have,
  or a convolution, linear or pooling node that ran no kernel mean another program.

A mismatch is an AnalysisError (exit 2) naming the files and the first disagreement.

Before anything runs there is no ETDump, and `check_program_belongs` asks the same of the events the
.pte would make: one per kernel call (named as the runtime names it, `native_call_addmm.out`) and per
delegate call of its `forward`, plus the converse (every instruction the ETRecord links is a call of
the program), and every XNNPACK delegate's nodes must carry debug handles the ETRecord gives it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.etdump_events import EventInfo
from orchestrator.profiles.etrecord import RESERVED_FRAMEWORK_EVENT_NAMES, ETRecordInfo
from orchestrator.profiles.pte_program import read_delegate_calls

if TYPE_CHECKING:
    from orchestrator.profiles.kernel_map import KernelLink

PORTABLE_PREFIX = "native_call_"
MISMATCH_SHARE = 0.5  # more than this share of named portable kernels not matching their instruction's ops


def check_belongs(record: ETRecordInfo, block_events: Sequence[tuple[EventInfo, ...]],
                  kernels: Sequence[tuple[KernelLink | None, ...]] | None, etdumps: Sequence[os.PathLike[str] | str],
                  pte: os.PathLike[str] | str | None) -> None:
    """Raise AnalysisError when the ETRecord (or the .pte) is not of the program the ETDumps ran."""
    what = f"{record.path}" + (f" and {pte}" if pte is not None else "")
    dumps = ", ".join(str(p) for p in etdumps[:2]) + (" ..." if len(etdumps) > 2 else "")
    problem = _instruction_problem(record, block_events) or _name_problem(record, block_events)
    if problem is None and kernels is not None:
        problem = next((f"{k.event_name}: {k.reason}" for links in kernels for k in links if k is not None and k.foreign),
                       None)
    if problem is not None:
        raise AnalysisError(f"{what} do{'' if pte is not None else 'es'} not belong to the program of {dumps}: {problem}")


def check_program_belongs(record: ETRecordInfo, pte: os.PathLike[str] | str) -> None:
    """Raise AnalysisError when the ETRecord is not of the .pte's program (no ETDump needed)."""
    from orchestrator.profiles.kernel_map import load_kernel_program

    program = load_kernel_program(pte, record.path)
    calls = {k.instruction_id: k.event_name for k in read_delegate_calls(pte).kernels
             if k.method == program.method and k.chain == 0}
    calls.update(dict.fromkeys(program.calls, "DELEGATE_CALL"))
    events = (tuple(EventInfo(n, calls[iid], iid, None, False, True) for n, iid in enumerate(sorted(calls))),)
    problem = (_instruction_problem(record, events) or _name_problem(record, events) or _uncalled(record, calls)
               or next((why for iid in program.calls if (why := program.foreign(iid)) is not None), None))
    if problem is not None:
        raise AnalysisError(f"{record.path} does not belong to the program {pte}: {problem}")


def _uncalled(record: ETRecordInfo, calls: Mapping[int, str]) -> str | None:
    """The converse of `_instruction_problem`: an instruction the ETRecord links that the program does not call."""
    extra = sorted(int(iid) for iid in record.handle_map if str(iid).isdigit() and int(iid) not in calls)
    return f"the ETRecord links instruction {extra[0]}, which calls nothing in the program" if extra else None


def _operator_events(block_events: Sequence[tuple[EventInfo, ...]]) -> list[EventInfo]:
    return [e for events in block_events for e in events
            if e.name not in RESERVED_FRAMEWORK_EVENT_NAMES and e.instruction_id is not None
            and not isinstance(e.delegate_debug_identifier, str)]


def _instruction_problem(record: ETRecordInfo, block_events: Sequence[tuple[EventInfo, ...]]) -> str | None:
    for event in _operator_events(block_events):
        iid = str(event.instruction_id)
        if iid not in record.handle_map:
            return f"event {event.name!r} ran instruction {iid}, which the ETRecord does not have"
        if event.name == "DELEGATE_CALL" and record.delegate_map is not None and iid not in record.delegate_map:
            return f"a delegate call ran at instruction {iid}, where the ETRecord has no delegate"
    return None


def _name_problem(record: ETRecordInfo, block_events: Sequence[tuple[EventInfo, ...]]) -> str | None:
    checked, wrong = 0, []
    for event in _operator_events(block_events):
        if not event.name.startswith(PORTABLE_PREFIX):
            continue
        expected = _ops_at(record, str(event.instruction_id))
        if not expected:
            continue
        checked += 1
        ran = event.name[len(PORTABLE_PREFIX):].rsplit(".", 1)[0]
        if ran not in expected:
            wrong.append(f"instruction {event.instruction_id} ran {ran!r}, the ETRecord has {', '.join(sorted(expected))}")
    if checked and len(wrong) > MISMATCH_SHARE * checked:
        return f"{len(wrong)} of {checked} ops differ (first: {wrong[0]})"
    return None


def _ops_at(record: ETRecordInfo, iid: str) -> set[str]:
    handles = record.handle_map.get(iid)
    found = set()
    for handle in [handles] if isinstance(handles, int) else handles or ():
        for node in record.nodes_by_handle.get(handle, ()) if isinstance(handle, int) else ():
            if node.op.count(".") >= 1:
                found.add(node.op.split(".")[-2] if node.op.count(".") >= 2 else node.op.split(".")[0])
    return found
