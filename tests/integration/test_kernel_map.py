"""Every XNNPACK kernel of a real ETDump named in the user's model, checked against the model itself.

Real exports (`export_model`, cached in the session's cache) and real ETDumps (ExecuTorch's Python
runtime with event tracing, and once the C++ runner through `etfarm run`). Expectations come from
the nn.Module (its submodules, their types and order) and from the model's source file (the line
that calls each submodule), never from strings copied out of a mapping.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.artifacts.lowering import export_model
from orchestrator.artifacts.modelspec import load_factory_result, parse_model_spec
from orchestrator.artifacts.tensorfile import read_tensors
from orchestrator.profiles.etdump import read_etdump
from orchestrator.profiles.etdump_events import EventInfo, group_blocks
from orchestrator.profiles.kernel_align import operator_family
from orchestrator.profiles.kernel_map import KernelLink, load_kernel_program
from orchestrator.results.model import load_manifest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
MODELS = Path(__file__).resolve().parent / "models"
TINY_CNN = REPO / "configs" / "models" / "tiny_cnn.py"
THREE_CONVS = MODELS / "three_convs.py"
FUSED = MODELS / "fused_blocks.py"
INT8 = MODELS / "int8.py"
ITERATIONS = 3


@dataclass(frozen=True)
class Mapped:
    model: object  # the float nn.Module: the structure expectations come from
    source: Path  # the float model's file
    pte: Path
    etrecord: Path
    etdump: Path
    kernels: tuple[KernelLink, ...]  # one per kernel event of an execution, in block order


def kernel_links(pte: Path, etrecord: Path, etdump: Path) -> tuple[KernelLink, ...]:
    program = load_kernel_program(pte, etrecord)
    (execute,) = [g for g in group_blocks(read_etdump(etdump)) if any(e.is_delegated_op for e in g.events)]
    return tuple(link for link in program.link_block(execute.events) if link is not None)


@functools.cache
def _workdir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="etfarm-kernel-map-"))
    atexit.register(shutil.rmtree, path, True)
    return path


@functools.cache
def mapped(spec: str, float_spec: str, name: str) -> Mapped:
    """Export `spec` with XNNPACK (cached), run it ITERATIONS times with event tracing, map its kernels."""
    import torch
    from executorch.runtime import Runtime

    exported = export_model(parse_model_spec(spec, name=name), "xnnpack")
    assert exported.etrecord is not None and exported.inputs is not None
    inputs = tuple(torch.from_numpy(a) for a in read_tensors(exported.inputs))
    program = Runtime.get().load_program(exported.pte, enable_etdump=True)
    method = program.load_method("forward")
    for _ in range(ITERATIONS):
        method.execute(inputs)
    etdump = _workdir() / f"{name}.etdp"
    program.write_etdump_result_to_file(str(etdump), str(etdump.with_suffix(".bin")))
    model = load_factory_result(parse_model_spec(float_spec))[0]
    return Mapped(model, Path(float_spec.rpartition(":")[0]), exported.pte, exported.etrecord, etdump,
                  kernel_links(exported.pte, exported.etrecord, etdump))


def line_of(source: Path, text: str) -> str:
    lines = source.read_text().splitlines()
    return f"{source.name}:{next(i + 1 for i, line in enumerate(lines) if text in line)}"


def modules_of(model: object, *types: type) -> list[str]:
    """Paths of the model's submodules of these types, in registration (= execution) order."""
    return [name for name, module in model.named_modules() if isinstance(module, types)]  # type: ignore[attr-defined]


THREE_CONVS_CASES = {
    "fp32": (f"{THREE_CONVS}:build", "three_convs"),
    "int8": (f"{INT8}:three_convs_int8", "three_convs_int8"),
}


@pytest.mark.parametrize("variant", sorted(THREE_CONVS_CASES))
def test_each_convolution_kernel_names_its_own_convolution(variant: str) -> None:
    from torch import nn

    spec, name = THREE_CONVS_CASES[variant]
    run = mapped(spec, f"{THREE_CONVS}:build", name)
    convs = modules_of(run.model, nn.Conv2d)
    assert len(convs) == 3
    assert all(k.mapped for k in run.kernels), [(k.event_name, k.reason) for k in run.kernels if not k.mapped]
    # GEMM-like kernels ran the convolutions (the 1x1 one as a fully-connected GEMM), one each, in order
    compute = [k for k in run.kernels if operator_family(k.event_name) in ("Convolution", "Fully Connected")]
    assert [k.module_path for k in compute] == convs
    assert len({k.module_path for k in compute}) == 3
    assert [k.source_line for k in compute] == [line_of(run.source, f"self.{c}(x)") for c in convs]
    # the rest (layout transposes, int8 converts) sit next to a convolution or at the model's top
    assert {k.module_path for k in run.kernels} <= {*convs, ""}


TINY_CNN_CASES = {"fp32": (f"{TINY_CNN}:build", "tiny_cnn"), "int8": (f"{INT8}:tiny_cnn_int8", "tiny_cnn_int8")}


@pytest.mark.parametrize("variant", sorted(TINY_CNN_CASES))
def test_every_tiny_cnn_kernel_names_the_module_it_came_from(variant: str) -> None:
    from torch import nn

    spec, name = TINY_CNN_CASES[variant]
    run = mapped(spec, f"{TINY_CNN}:build", name)
    model = run.model
    ran_as = {"Convolution": nn.Conv2d, "Max Pooling": nn.MaxPool2d, "Mean": nn.AdaptiveAvgPool2d, "Fully Connected": nn.Linear}
    assert all(k.mapped for k in run.kernels), [(k.event_name, k.reason) for k in run.kernels if not k.mapped]
    compute = [k for k in run.kernels if operator_family(k.event_name) in ran_as]
    for kernel in compute:
        module = model.get_submodule(kernel.module_path)
        assert isinstance(module, ran_as[operator_family(kernel.event_name)]), (kernel.event_name, kernel.module_path)
    # one kernel per conv, pool and linear module of the model, in the model's order
    assert [k.module_path for k in compute] == modules_of(model, *ran_as.values())
    # each ReLU ran inside the convolution before it (the lowering folds it in)
    features = [name for name, _ in model.features.named_children()]
    for index, child in enumerate(model.features.children()):
        if isinstance(child, nn.ReLU):
            conv = next(k for k in compute if k.module_path == f"features.{features[index - 1]}")
            assert f"features.{features[index]}" in conv.covers, conv
    # the flatten between features and head is the model's own line; everything is in features or head
    flatten = [k for k in run.kernels if operator_family(k.event_name) == "Static Reshape"]
    assert [(k.module_path, k.source_line) for k in flatten] == [("", line_of(run.source, "torch.flatten("))]
    for kernel in run.kernels:
        assert kernel.module_path.split(".")[0] in {"features", "head", ""}, kernel
        if kernel.module_path.startswith("features."):
            assert kernel.module_path.count(".") == 1  # features.N itself, the module it came from


def test_fused_kernels_name_every_op_they_ran() -> None:
    from torch import nn

    run = mapped(f"{FUSED}:build", f"{FUSED}:build", "fused_blocks")
    model = run.model
    assert all(k.mapped for k in run.kernels), [(k.event_name, k.reason) for k in run.kernels if not k.mapped]
    by_module = {k.module_path: k for k in run.kernels if operator_family(k.event_name) in ("Convolution", "Fully Connected")}
    conv = next(p for p in modules_of(model, nn.Conv2d) if model.get_submodule(p).groups == 1)
    dw = next(p for p in modules_of(model, nn.Conv2d) if model.get_submodule(p).groups > 1)
    bn, act, fc_act = modules_of(model, nn.BatchNorm2d)[0], *modules_of(model, nn.ReLU)
    fc = modules_of(model, nn.Linear)[0]
    assert set(by_module) == {conv, dw, fc}  # batch norm and ReLUs ran no kernel of their own
    # conv -> bn -> relu: one kernel, the lowering folded both into the convolution
    assert {n.module_path: n.role for n in by_module[conv].nodes} == {conv: "ran", bn: "fused", act: "fused"}
    assert by_module[conv].covers == (conv, bn, act)
    # pad -> depthwise conv -> clamp: three serialized nodes, one kernel (XNNPACK fused them)
    assert len(by_module[dw].xnodes) == 3
    ops = {n.op.split(".")[-2]: n.role for n in by_module[dw].nodes}
    assert ops == {"convolution": "ran", "constant_pad_nd": "fused", "clamp": "fused"}
    assert by_module[dw].source_line == line_of(run.source, "self.dw(")
    # linear (with its bias) -> relu: one fully-connected kernel
    assert [n.module_path for n in by_module[fc].nodes] == [fc, fc_act]
    assert "aten.relu.default" in by_module[fc].note


def test_a_foreign_program_leaves_kernels_unmapped_with_the_reason() -> None:
    """The ETDump of one model read against another model's .pte and ETRecord: no kernel is named."""
    three = mapped(f"{THREE_CONVS}:build", f"{THREE_CONVS}:build", "three_convs")
    tiny = mapped(f"{TINY_CNN}:build", f"{TINY_CNN}:build", "tiny_cnn")
    links = kernel_links(tiny.pte, tiny.etrecord, three.etdump)
    assert links and not any(k.mapped for k in links)
    assert all("another program" in k.reason for k in links)


def test_runner_etdumps_map_as_the_python_runtimes(tmp_path: Path) -> None:
    """`etfarm run` on `local` (the C++ runner): its kernel events map exactly like the Python runtime's."""
    out = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", "--model", f"{TINY_CNN}:build", "--runs", "1",
                             "--iterations", "2", "--warmup", "0", "--out", str(out), "--no-store", "--no-report"],
                            check=False, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    model = load_manifest(out).models[0]
    assert model.etrecord is not None
    (dump,) = (out / "local" / "tiny_cnn").glob("run-*/etdump.etdp")
    runner = kernel_links(Path(model.pte), Path(model.etrecord), dump)
    python = mapped(f"{TINY_CNN}:build", f"{TINY_CNN}:build", "tiny_cnn").kernels

    def key(links: tuple[KernelLink, ...]) -> list[tuple[str, str, str, tuple[str, ...]]]:
        return [(k.event_name, k.module_path, k.source_line, k.covers) for k in links]

    assert key(runner) == key(python)
    assert all(k.mapped for k in runner)


def test_events_without_kernels_get_no_link() -> None:
    run = mapped(f"{TINY_CNN}:build", f"{TINY_CNN}:build", "tiny_cnn")
    program = load_kernel_program(run.pte, run.etrecord)
    for group in group_blocks(read_etdump(run.etdump)):
        links = program.link_block(group.events)
        for event, link in zip(group.events, links, strict=True):
            assert (link is not None) == _is_kernel(event), event


def _is_kernel(event: EventInfo) -> bool:
    return event.is_delegated_op and isinstance(event.delegate_debug_identifier, str)
