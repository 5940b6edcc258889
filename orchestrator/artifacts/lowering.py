"""Lower a model spec to an ExecuTorch program: .pte, ETRecord, inputs, reference outputs.

Exports are cached by a content hash of the model source, factory, backend and
tool versions, so an unchanged spec is never exported twice and a warm run
does not even import torch. The factory is deterministic by contract (seed
your inputs), which is why the source stands in for the inputs in the key.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator import cache
from orchestrator.artifacts.generation import Workload
from orchestrator.artifacts.llm import LlmRecipe
from orchestrator.artifacts.llm_export import export_llm_into
from orchestrator.artifacts.model_sources import local_sources
from orchestrator.artifacts.modelspec import ModelSpec, call_factory, check_factory_result, user_code
from orchestrator.errors import ExportError, ModelSpecError, UsageError
from orchestrator.versions import tool_versions

BACKENDS = ("xnnpack", "portable")
# Bump when the export recipe or the artifact layout changes: old cache entries are then ignored.
EXPORT_FORMAT = "etfarm-export-2"  # 2: numerics_reference.npz (AOT intermediate outputs)

PTE_NAME = "model.pte"
ETRECORD_NAME = "etrecord.bin"
INPUTS_NAME = "inputs.etft"
REFERENCE_NAME = "reference_outputs.etft"
META_NAME = "meta.json"
NUMERICS_REFERENCE_NAME = "numerics_reference.npz"
LLM_REFERENCE_NAME = "llm_reference.json"  # an LLM's eager greedy tokens (llm.LlmReference)


@dataclass(frozen=True)
class ExportedModel:
    """The artifacts of one lowered model, wherever they live."""

    name: str
    spec: str
    backend: str
    key: str
    pte: Path
    etrecord: Path | None
    inputs: Path | None
    reference_outputs: Path | None
    cached: bool
    numerics_reference: Path | None = None  # AOT intermediate outputs (see numerics_reference.py)
    llm_reference: Path | None = None  # an LLM's eager greedy tokens (see llm.py); no inputs/reference_outputs then
    workload: Workload = Workload()  # what its process runs ask of the runner: a job's sweep point (run/sweep.py)
    given: bool = False  # a .pte the user gave, its other files found beside it: checked to be of it (run/belonging.py)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec,
            "backend": self.backend,
            "key": self.key,
            "pte": str(self.pte),
            "etrecord": str(self.etrecord) if self.etrecord else None,
            "inputs": str(self.inputs) if self.inputs else None,
            "reference_outputs": str(self.reference_outputs) if self.reference_outputs else None,
            "numerics_reference": str(self.numerics_reference) if self.numerics_reference else None,
            "llm_reference": str(self.llm_reference) if self.llm_reference else None,
        }


def export_key(spec: ModelSpec, backend: str) -> str:
    """Content hash of everything the export depends on: the model file and the local modules it
    imports (a .pte is its own content), the factory, the backend and the tool versions."""
    versions = tool_versions()
    sources = [spec.source] if spec.kind == "pte" else local_sources(spec.source)
    contents = [part for path in sources for part in (os.path.relpath(path, spec.source.parent), path.read_bytes())]
    return cache.sha256_parts(
        [EXPORT_FORMAT, *contents, spec.factory or "", backend, versions["torch"], versions["executorch"]]
    )


def export_model(
    spec: ModelSpec,
    backend: str = "xnnpack",
    *,
    force: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> ExportedModel:
    """Return the lowered artifacts of `spec`, exporting only on a cache miss."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if spec.kind == "pte":
        return _existing_pte(spec, backend)
    key = export_key(spec, backend)
    entry = cache.cache_dir("exports") / f"{spec.name}-{key[:16]}"
    if not force:
        entry = _same_export(entry, key)
    if (entry / META_NAME).is_file() and not force:
        log(f"export cached: {spec.name} ({backend}) {entry}")
        return _from_entry(spec, backend, key, entry, cached=True)
    if force and entry.exists():
        shutil.rmtree(entry)
    log(f"exporting {spec.name} with {backend} (imports torch, takes a few seconds)")
    staging = cache.staging_dir("exports")
    try:
        started = time.monotonic()
        with user_code(spec):  # the model's forward may print or exit while it is traced
            notes = _lower_into(spec, backend, staging, log)
        cache.write_json_atomic(
            staging / META_NAME,
            {"name": spec.name, "spec": spec.text, "backend": backend, "key": key, "versions": tool_versions(),
             "export_s": round(time.monotonic() - started, 3), **notes},
        )
        cache.publish_dir(staging, entry)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    log(f"exported {spec.name} in {time.monotonic() - started:.1f}s -> {entry}")
    return _from_entry(spec, backend, key, entry, cached=False)


def _same_export(entry: Path, key: str) -> Path:
    """`entry`, or an entry of the same content exported under another model name (an A/B job names both
    copies of a file apart; an LLM's export takes minutes: it is not repeated for a name)."""
    if (entry / META_NAME).is_file():
        return entry
    for other in sorted(entry.parent.glob(f"*-{key[:16]}")):
        try:
            if json.loads((other / META_NAME).read_text()).get("key") == key:
                return other
        except (OSError, ValueError):
            continue
    return entry


def copy_artifacts(model: ExportedModel, out_dir: Path) -> list[Path]:
    """Copy a model's artifacts to out_dir (for `etfarm export --out`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    copied = []
    for path in (model.pte, model.etrecord, model.inputs, model.reference_outputs, model.numerics_reference,
                 model.llm_reference):
        if path is not None:
            copied.append(Path(shutil.copy2(path, out_dir / path.name)))
    return copied


def _from_entry(spec: ModelSpec, backend: str, key: str, entry: Path, cached: bool) -> ExportedModel:
    def present(name: str) -> Path | None:
        return entry / name if (entry / name).is_file() else None

    return ExportedModel(
        name=spec.name, spec=spec.text, backend=backend, key=key, pte=entry / PTE_NAME,
        etrecord=present(ETRECORD_NAME), inputs=present(INPUTS_NAME), reference_outputs=present(REFERENCE_NAME),
        cached=cached, numerics_reference=present(NUMERICS_REFERENCE_NAME), llm_reference=present(LLM_REFERENCE_NAME),
    )


def _existing_pte(spec: ModelSpec, backend: str) -> ExportedModel:
    """A ready .pte: use the ETRecord, inputs and reference outputs found beside it, if any."""
    folder, stem = spec.source.parent, spec.source.stem

    def beside(*names: str) -> Path | None:
        return next((folder / n for n in names if (folder / n).is_file()), None)

    return ExportedModel(
        name=spec.name, spec=spec.text, backend=backend, key=cache.sha256_file(spec.source), pte=spec.source,
        etrecord=beside(f"{stem}.etrecord", f"{stem}.etrecord.bin", ETRECORD_NAME),
        inputs=beside(f"{stem}.inputs.etft", INPUTS_NAME),
        reference_outputs=beside(f"{stem}.reference_outputs.etft", REFERENCE_NAME),
        cached=True, numerics_reference=beside(f"{stem}.numerics_reference.npz", NUMERICS_REFERENCE_NAME),
        llm_reference=beside(f"{stem}.llm_reference.json", LLM_REFERENCE_NAME), given=True,
    )


def _lower_into(spec: ModelSpec, backend: str, out: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """Export into `out`; returns notes for meta.json (what could not be made, and why)."""
    result = call_factory(spec)
    if isinstance(result, LlmRecipe):
        llm_error = export_llm_into(result, backend, out / PTE_NAME, quiet=_quiet_export_noise)
        if llm_error:
            log(f"{spec.name}: no eager reference ({llm_error}); generated tokens will not be verified")
        return {"kind": "llm", "llm_reference_error": llm_error}
    numerics_error = _lower_module(spec, check_factory_result(spec, result), backend, out)
    if numerics_error:
        log(f"{spec.name}: no numerics reference ({numerics_error}); `etfarm numerics` will compare devices only")
    return {"kind": "module", "numerics_reference_error": numerics_error}


def _lower_module(spec: ModelSpec, factory_result: tuple[Any, tuple[Any, ...]], backend: str, out: Path) -> str | None:
    """Export (module, inputs) into `out`; returns why the numerics reference could not be made (None: it was)."""
    import torch

    from orchestrator.artifacts.tensorfile import write_tensors

    _quiet_export_noise()  # after importing torch: its logging setup resets levels on import

    model, inputs = factory_result
    try:
        with torch.no_grad():
            reference = model(*inputs)
    except Exception as exc:
        raise ModelSpecError(
            f"model spec {spec.text!r}: running the model on its example inputs raised {type(exc).__name__}: {exc}") from None
    try:
        program = _lower(model, inputs, backend)
        program.save(str(out / PTE_NAME))
        etrecord = program.get_etrecord()
        etrecord.update_representative_inputs(inputs)
        etrecord.save(str(out / ETRECORD_NAME))
    except ModelSpecError:
        raise
    except Exception as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ExportError(f"exporting {spec.text!r} with {backend} failed: {type(exc).__name__}: {first_line}") from None
    write_tensors(out / INPUTS_NAME, [t.detach().contiguous().numpy() for t in inputs])
    write_tensors(out / REFERENCE_NAME, [t.detach().contiguous().numpy() for t in _flatten_outputs(reference)])
    try:  # optional: a model Inspector cannot replay still profiles; numerics then compares devices only
        # numpy: every command imports this module, `etfarm --help` included
        from orchestrator.artifacts.numerics_reference import write_numerics_reference

        write_numerics_reference(out / ETRECORD_NAME, out / NUMERICS_REFERENCE_NAME)
    except Exception as exc:  # noqa: BLE001  (any failure of the replay is reported, not fatal)
        (out / NUMERICS_REFERENCE_NAME).unlink(missing_ok=True)
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return None


def _lower(model: Any, inputs: tuple[Any, ...], backend: str) -> Any:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    with _without_partial_graph():
        exported = torch.export.export(model, inputs)
    if backend == "xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
            XnnpackPartitioner,
        )
        from executorch.backends.xnnpack.utils.configs import (
            get_xnnpack_edge_compile_config,
        )

        edge = to_edge_transform_and_lower(
            exported,
            partitioner=[XnnpackPartitioner()],
            compile_config=get_xnnpack_edge_compile_config(),
            generate_etrecord=True,
        )
    else:
        edge = to_edge_transform_and_lower(exported, generate_etrecord=True)
    return edge.to_executorch()


@contextlib.contextmanager
def _without_partial_graph() -> Iterator[None]:
    """torch.export prints the partial FX graph of a failed export to sys.stderr (`_log_export_wrapper` in
    torch/export/_trace.py): some 20 lines of graph before etfarm's one-line error. What is written to
    sys.stderr meanwhile is held, and given back without that graph (a model's own prints pass)."""
    held = io.StringIO()
    try:
        with contextlib.redirect_stderr(held):
            yield
    except Exception as exc:
        graph = getattr(exc, "partial_fx_graph", None)
        sys.stderr.write(held.getvalue().replace(f"{graph}\n", "") if graph else held.getvalue())
        raise
    sys.stderr.write(held.getvalue())


def _flatten_outputs(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _flatten_outputs(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _flatten_outputs(item)]
    raise ExportError(f"model output of type {type(value).__name__} is not supported; return tensors (or tuples of them)")


def _quiet_export_noise() -> None:
    """torch/torchao/executorch log and warn a lot on import and export; keep the CLI readable."""
    for name in ("torch", "torchao", "executorch"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
