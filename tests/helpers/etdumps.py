"""Build real ETDumps with the ExecuTorch Python runtime (export -> run with event tracing).

Shared by the analysis tests and `benchmarks/bench_analysis.py`. Heavy imports (torch,
executorch) happen inside the functions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PORTABLE = "portable"
XNNPACK = "xnnpack"


@dataclass(frozen=True)
class ExportedModel:
    kind: str
    layers: int
    pte: Path
    etrecord: Path


def export_mlp(out_dir: Path, kind: str = PORTABLE, layers: int = 3, width: int = 16) -> ExportedModel:
    """Export `layers` x (Linear -> ReLU -> residual add); XNNPACK-delegated or portable ops."""
    import torch
    from executorch.exir import to_edge_transform_and_lower

    class ResidualMLP(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(width, width) for _ in range(layers)])

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers:
                x = torch.relu(layer(x)) + x
            return x

    torch.manual_seed(0)
    model = ResidualMLP().eval()
    example = (torch.randn(2, width),)
    partitioners = None
    if kind == XNNPACK:
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
            XnnpackPartitioner,
        )

        partitioners = [XnnpackPartitioner()]
    elif kind != PORTABLE:
        raise ValueError(f"unknown model kind {kind!r}")
    exported = torch.export.export(model, example)
    program = to_edge_transform_and_lower(exported, partitioner=partitioners, generate_etrecord=True).to_executorch()
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = f"{kind}-{layers}x{width}"
    pte = out_dir / f"{stem}.pte"
    etrecord = out_dir / f"{stem}.etrecord"
    pte.write_bytes(program.buffer)
    program.get_etrecord().save(str(etrecord))
    return ExportedModel(kind, layers, pte, etrecord)


def run_etdump(model: ExportedModel, etdump: Path, iterations: int, width: int = 16, debug_buffer_size: int = 0) -> Path:
    """Load the program with event tracing, execute `iterations` times, write the ETDump."""
    import torch
    from executorch.runtime import Runtime

    program = Runtime.get().load_program(model.pte, enable_etdump=True, debug_buffer_size=debug_buffer_size)
    method = program.load_method("forward")
    inputs = (torch.randn(2, width),)
    for _ in range(iterations):
        method.execute(inputs)
    etdump.parent.mkdir(parents=True, exist_ok=True)
    debug_path = etdump.with_suffix(".bin")
    program.write_etdump_result_to_file(str(etdump), str(debug_path))
    if debug_buffer_size == 0 and debug_path.exists() and debug_path.stat().st_size == 0:
        debug_path.unlink()
    return etdump


# --- Cached real artifacts: one export per model kind per test process ----------------------

_WORKDIR: Path | None = None


def _workdir() -> Path:
    global _WORKDIR
    if _WORKDIR is None:
        import atexit
        import shutil
        import tempfile

        _WORKDIR = Path(tempfile.mkdtemp(prefix="etfarm-etdumps-"))
        atexit.register(shutil.rmtree, _WORKDIR, True)
    return _WORKDIR


_MODELS: dict[tuple[str, int], ExportedModel] = {}
_RUNS: dict[tuple[str, int, int, int, int], Path] = {}


def real_model(kind: str = PORTABLE, layers: int = 3) -> ExportedModel:
    """An exported model, exported once per process (exporting takes seconds)."""
    key = (kind, layers)
    if key not in _MODELS:
        _MODELS[key] = export_mlp(_workdir() / "models", kind, layers)
    return _MODELS[key]


def real_etdump(kind: str = PORTABLE, iterations: int = 5, run: int = 0, layers: int = 3, debug_buffer_size: int = 0) -> Path:
    """ETDump of process-run `run` (a separate Program load) of `real_model(kind, layers)`."""
    key = (kind, layers, iterations, run, debug_buffer_size)
    if key not in _RUNS:
        model = real_model(kind, layers)
        path = _workdir() / "runs" / f"{kind}-{layers}-{iterations}-{debug_buffer_size}-run{run}.etdp"
        _RUNS[key] = run_etdump(model, path, iterations, debug_buffer_size=debug_buffer_size)
    return _RUNS[key]


# --- Synthetic ETDumps, built with the flatbuffers Builder (no torch, any edge case) ---------


@dataclass
class Profile:
    name: str | None = None
    chain: int = 0
    instr: int = -1
    dd_int: int = -1
    dd_str: str | None = None
    start: int = 0
    end: int = 0
    metadata: bytes | None = None


@dataclass
class Debug:
    name: str | None = None
    chain: int = 0
    instr: int = -1
    dd_int: int = -1
    dd_str: str | None = None
    int_value: int = 0
    output: bool | None = None  # None: no `output` field; True marks a run output


@dataclass
class Allocation:
    allocator_id: int = 0
    size: int = 0


@dataclass
class Run:
    name: str | None = "Execute"
    events: list[Profile | Debug | Allocation] | None = None  # None: no events vector at all
    bundled_input_index: int = -1
    allocators: list[str] | None = None


_VALUE_TYPE_INT = 1


def build_etdump(runs: list[Run], version: int = 0, size_prefixed: bool = True, shared_strings: bool = False) -> bytes:
    """Serialize runs per etdump_schema_flatcc.fbs (identifier ED00); `shared_strings` writes each
    distinct string once and points every reference at it (as flatcc's shared strings do)."""
    import flatbuffers

    b = flatbuffers.Builder(1024)

    def string(text: str | None) -> int | None:
        if text is None:
            return None
        return b.CreateSharedString(text) if shared_strings else b.CreateString(text)

    def table_vector(offsets: list[int]) -> int:
        b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    def event(ev: Profile | Debug | Allocation) -> int:
        if isinstance(ev, Profile):
            name, dd_str = string(ev.name), string(ev.dd_str)
            meta = b.CreateByteVector(ev.metadata) if ev.metadata is not None else None
            b.StartObject(8)
            if name is not None:
                b.PrependUOffsetTRelativeSlot(0, name, 0)
            b.PrependInt32Slot(1, ev.chain, 0)
            b.PrependInt32Slot(2, ev.instr, -1)
            b.PrependInt32Slot(3, ev.dd_int, -1)
            if dd_str is not None:
                b.PrependUOffsetTRelativeSlot(4, dd_str, 0)
            if meta is not None:
                b.PrependUOffsetTRelativeSlot(5, meta, 0)
            b.PrependUint64Slot(6, ev.start, 0)
            b.PrependUint64Slot(7, ev.end, 0)
            inner, slot = b.EndObject(), 0
        elif isinstance(ev, Debug):
            b.StartObject(1)
            b.PrependInt64Slot(0, ev.int_value, 0)
            int_table = b.EndObject()
            flag = None
            if ev.output is not None:
                b.StartObject(1)
                b.PrependBoolSlot(0, ev.output, False)
                flag = b.EndObject()
            b.StartObject(8)
            b.PrependInt8Slot(0, _VALUE_TYPE_INT, 0)
            b.PrependUOffsetTRelativeSlot(3, int_table, 0)
            if flag is not None:
                b.PrependUOffsetTRelativeSlot(7, flag, 0)
            value = b.EndObject()
            name, dd_str = string(ev.name), string(ev.dd_str)
            b.StartObject(6)
            b.PrependUint64Slot(0, ev.chain, 0)
            b.PrependInt32Slot(1, ev.instr, -1)
            b.PrependUOffsetTRelativeSlot(2, value, 0)
            b.PrependInt32Slot(3, ev.dd_int, -1)
            if dd_str is not None:
                b.PrependUOffsetTRelativeSlot(4, dd_str, 0)
            if name is not None:
                b.PrependUOffsetTRelativeSlot(5, name, 0)
            inner, slot = b.EndObject(), 2
        else:
            b.StartObject(2)
            b.PrependInt32Slot(0, ev.allocator_id, 0)
            b.PrependUint64Slot(1, ev.size, 0)
            inner, slot = b.EndObject(), 1
        b.StartObject(3)
        b.PrependUOffsetTRelativeSlot(slot, inner, 0)
        return b.EndObject()

    run_offsets = []
    for run in runs:
        events = table_vector([event(e) for e in run.events]) if run.events is not None else None
        allocators = None
        if run.allocators is not None:
            names = [b.CreateString(a) for a in run.allocators]
            tables = []
            for n in names:
                b.StartObject(1)
                b.PrependUOffsetTRelativeSlot(0, n, 0)
                tables.append(b.EndObject())
            allocators = table_vector(tables)
        name = string(run.name)
        b.StartObject(4)
        if name is not None:
            b.PrependUOffsetTRelativeSlot(0, name, 0)
        b.PrependInt32Slot(1, run.bundled_input_index, -1)
        if allocators is not None:
            b.PrependUOffsetTRelativeSlot(2, allocators, 0)
        if events is not None:
            b.PrependUOffsetTRelativeSlot(3, events, 0)
        run_offsets.append(b.EndObject())
    run_data = table_vector(run_offsets)
    b.StartObject(2)
    b.PrependUint32Slot(0, version, 0)
    b.PrependUOffsetTRelativeSlot(1, run_data, 0)
    root = b.EndObject()
    if size_prefixed:
        b.FinishSizePrefixed(root, file_identifier=b"ED00")
    else:
        b.Finish(root, file_identifier=b"ED00")
    return bytes(b.Output())


def typical_runs(iterations: int = 3, layers: int = 2, base: int = 1_000_000) -> list[Run]:
    """A load block then `iterations` execute blocks shaped like the portable runtime's."""
    runs = [Run("Default", [Profile("Method::init", chain=-1, instr=0, start=base + 10, end=base + 900),
                            Profile("Program::load_method", chain=-1, instr=0, start=base, end=base + 1000)])]
    t = base + 2000
    for it in range(iterations):
        events: list[Profile | Debug | Allocation] = []
        begin = t
        for i in range(layers):
            events.append(Profile(f"native_call_op{i}.out", instr=i, start=t + 5, end=t + 100 + 10 * i + it))
            events.append(Profile("OPERATOR_CALL", instr=i, start=t, end=t + 110 + 10 * i + it))
            t += 200
        events.append(Profile("Method::execute", chain=-1, instr=0, start=begin - 1, end=t + 1))
        runs.append(Run("Execute", events))
        t += 1000
    return runs
