"""Lower a model spec to an ExecuTorch program: .pte, ETRecord, inputs, reference outputs.

Exports are cached by a content hash of the model source, factory, backend and
tool versions, so an unchanged spec is never exported twice and a warm run
does not even import torch. The factory is deterministic by contract (seed
your inputs), which is why the source stands in for the inputs in the key.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.artifacts.calibration import CalibratedModel
from orchestrator.artifacts.export_entry import (
    EAGER_OUTPUTS_NAME,
    EAGER_REFERENCE_NAME,
    ETRECORD_NAME,
    INPUTS_NAME,
    LLM_REFERENCE_NAME,
    META_NAME,
    NUMERICS_REFERENCE_NAME,
    PTE_NAME,
    RECIPE_NAME,
    REFERENCE_NAME,
    quiet_export_noise,
    run_eager,
    save_program,
    write_numerics,
)
from orchestrator.artifacts.export_phases import ExportPhases
from orchestrator.artifacts.generation import Workload
from orchestrator.artifacts.llm import LlmRecipe
from orchestrator.artifacts.llm_export import export_llm_into
from orchestrator.artifacts.llm_recipes import llm_under_recipe
from orchestrator.artifacts.model_sources import local_sources
from orchestrator.artifacts.modelspec import ModelSpec, call_factory, check_factory_result, user_code
from orchestrator.artifacts.recipe_export import export_recipe_into
from orchestrator.artifacts.recipes import RecipeInfo, RecipeSpec
from orchestrator.artifacts.runtime_noise import runtime_noise_dropped, without_partial_graph
from orchestrator.artifacts.xnnpack_patterns import skip_patterns_no_graph_can_match
from orchestrator.base import cache
from orchestrator.base.codec import encode
from orchestrator.base.errors import ConfigurationFailed, ExportError, ModelSpecError, UsageError
from orchestrator.base.versions import tool_versions

BACKENDS = ("xnnpack", "portable")
# Bump when the export recipe or the artifact layout changes: old cache entries are then ignored.
EXPORT_FORMAT = "etfarm-export-2"  # 2: numerics_reference.npz (AOT intermediate outputs)



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
    workload: Workload = Workload()  # what its process runs ask of the runner: a job's sweep point (run/engine/sweep.py)
    given: bool = False  # a .pte the user gave, its other files found beside it: checked to be of it (run/engine/belonging.py)
    recipe: RecipeInfo | None = None  # lowered with an export recipe (--recipe): which, and how it was quantized
    eager_outputs: Path | None = None  # a recipe export: the fp32 eager model's outputs on the inputs (accuracy)
    eager_reference: Path | None = None  # a recipe export: the fp32 eager model's intermediate outputs (per layer)

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
            **({"recipe": encode(self.recipe)} if self.recipe else {}),
        }


def export_key(spec: ModelSpec, backend: str, recipe: RecipeSpec | None = None) -> str:
    """Content hash of everything the export depends on: the model file and the local modules it
    imports (a .pte is its own content), the factory, the backend, the tool versions and the export
    recipe, if any (its name, or its factory's sources)."""
    versions = tool_versions()
    sources = [spec.source] if spec.kind == "pte" else local_sources(spec.source)
    contents = [part for path in sources for part in (os.path.relpath(path, spec.source.parent), path.read_bytes())]
    return cache.sha256_parts(
        [EXPORT_FORMAT, *contents, spec.factory or "", backend, versions["torch"], versions["executorch"],
         *(recipe.key_parts() if recipe is not None else [])]
    )


def export_model(
    spec: ModelSpec,
    backend: str = "xnnpack",
    *,
    recipe: RecipeSpec | None = None,
    force: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> ExportedModel:
    """Return the lowered artifacts of `spec` (with `recipe`, through ExecuTorch's export API), exporting only
    on a cache miss."""
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if spec.kind == "pte":
        if recipe is not None:
            raise UsageError(f"--recipe {recipe.text}: {spec.text} is a program already lowered; a recipe applies to "
                             "a model factory (file.py:factory)")
        return _existing_pte(spec, backend)
    key = export_key(spec, backend, recipe)
    found = None if force else _cached(spec, backend, recipe, key, log)
    if found is not None:
        return found
    waiting = f"waiting for another etfarm process exporting {spec.name} ({_how(backend, recipe)})"
    with cache.making("exports", key, lambda: log(waiting)):  # two processes missing one export make it once
        found = None if force else _cached(spec, backend, recipe, key, log)
        return found if found is not None else _export(spec, backend, recipe, key, log)


def _cached(spec: ModelSpec, backend: str, recipe: RecipeSpec | None, key: str,
            log: Callable[[str], None]) -> ExportedModel | None:
    """The cached export of `key`; None on a miss; ConfigurationFailed when this configuration failed before."""
    entry = _same_export(_entry(spec, recipe, key), key)
    if (entry / META_NAME).is_file():
        log(f"export cached: {spec.name} ({_how(backend, recipe)}) {entry}")
        return _from_entry(spec, backend, key, entry, cached=True)
    failed = _failed_marker(key)  # a configuration that failed: remembered
    if failed.is_file() and (reason := _failed_before(failed, key)):
        log(f"export failed before: {spec.name} ({_how(backend, recipe)}), same sources, versions and recipe "
            f"(`etfarm export --force` tries again)")
        raise ConfigurationFailed(reason)
    return None


def _entry(spec: ModelSpec, recipe: RecipeSpec | None, key: str) -> Path:
    return cache.cache_dir("exports") / "-".join([spec.name, *([recipe.label] if recipe else []), key[:16]])


def _failed_marker(key: str) -> Path:
    return cache.cache_dir("exports") / f"failed-{key[:32]}.json"


def _export(spec: ModelSpec, backend: str, recipe: RecipeSpec | None, key: str,
            log: Callable[[str], None]) -> ExportedModel:
    """Lower `spec` into a staging dir and publish it as the cache entry of `key` (a failure is remembered)."""
    entry = _entry(spec, recipe, key)
    failed = _failed_marker(key)
    if entry.exists():  # --force, or an entry without its META: made again
        shutil.rmtree(entry)
    log(f"exporting {spec.name} with {_how(backend, recipe)} (imports torch, takes a few seconds)")
    staging = cache.staging_dir("exports")
    try:
        started = time.monotonic()
        try:
            with runtime_noise_dropped(), user_code(spec):  # the model's forward may print or exit while it is traced
                notes = _lower_into(spec, backend, staging, log, recipe)
        except ConfigurationFailed as exc:
            cache.write_json_atomic(failed, {"key": key, "reason": str(exc)})
            raise
        cache.write_json_atomic(
            staging / META_NAME,
            {"name": spec.name, "spec": spec.text, "backend": backend, "key": key, "versions": tool_versions(),
             "export_s": round(time.monotonic() - started, 3), **notes},
        )
        cache.publish_dir(staging, entry)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    phases = f": {ExportPhases.from_dict(notes['phases']).line()}" if notes.get("phases") else ""
    log(f"exported {spec.name} ({_how(backend, recipe)}) in {time.monotonic() - started:.1f}s{phases} -> {entry}")
    return _from_entry(spec, backend, key, entry, cached=False)


def _failed_before(path: Path, key: str) -> str | None:
    """The reason a configuration of this key failed with, or None (another key's, or unreadable)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return str(data["reason"]) if isinstance(data, dict) and data.get("key") == key and data.get("reason") else None


def _how(backend: str, recipe: RecipeSpec | None) -> str:
    return f"recipe {recipe.label}" if recipe is not None else backend


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
                 model.llm_reference, model.eager_outputs, model.eager_reference):
        if path is not None:
            copied.append(Path(shutil.copy2(path, out_dir / path.name)))
    return copied


def _from_entry(spec: ModelSpec, backend: str, key: str, entry: Path, cached: bool) -> ExportedModel:
    def present(name: str) -> Path | None:
        return entry / name if (entry / name).is_file() else None

    recipe = present(RECIPE_NAME)
    return ExportedModel(
        name=spec.name, spec=spec.text, backend=backend, key=key, pte=entry / PTE_NAME,
        etrecord=present(ETRECORD_NAME), inputs=present(INPUTS_NAME), reference_outputs=present(REFERENCE_NAME),
        cached=cached, numerics_reference=present(NUMERICS_REFERENCE_NAME), llm_reference=present(LLM_REFERENCE_NAME),
        recipe=RecipeInfo.load(recipe) if recipe else None, eager_outputs=present(EAGER_OUTPUTS_NAME),
        eager_reference=present(EAGER_REFERENCE_NAME),
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


def _lower_into(spec: ModelSpec, backend: str, out: Path, log: Callable[[str], None],
                recipe: RecipeSpec | None = None) -> dict[str, Any]:
    """Export into `out`; returns notes for meta.json (what could not be made, and why)."""
    result = call_factory(spec)
    notes: dict[str, Any] = {}
    if isinstance(result, LlmRecipe) and recipe is not None:  # export_llama's own options for the recipe
        result, info = llm_under_recipe(spec.text, result, recipe)
        cache.write_json_atomic(out / RECIPE_NAME, encode(info))
        notes["recipe"] = encode(info)
    elif recipe is not None:
        return export_recipe_into(spec, result, recipe, out, log)
    if isinstance(result, CalibratedModel):  # calibration is for a recipe's quantization; the pair is the model
        result = (result.module, result.example_inputs)
    if isinstance(result, LlmRecipe):
        llm_error = export_llm_into(result, backend, out / PTE_NAME, quiet=quiet_export_noise)
        if llm_error:
            log(f"{spec.name}: no eager reference ({llm_error}); generated tokens will not be verified")
        return {"kind": "llm", "llm_reference_error": llm_error, **notes}
    numerics_error = _lower_module(spec, check_factory_result(spec, result), backend, out)
    if numerics_error:
        log(f"{spec.name}: no numerics reference ({numerics_error}); `etfarm numerics` will compare devices only")
    return {"kind": "module", "numerics_reference_error": numerics_error}


def _lower_module(spec: ModelSpec, factory_result: tuple[Any, tuple[Any, ...]], backend: str, out: Path) -> str | None:
    """Export (module, inputs) into `out`; returns why the numerics reference could not be made (None: it was)."""
    model, inputs = factory_result
    reference = run_eager(spec, model, inputs)
    try:
        program = _lower(model, inputs, backend)
    except ModelSpecError:
        raise
    except Exception as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ExportError(f"exporting {spec.text!r} with {backend} failed: {type(exc).__name__}: {first_line}") from None
    save_program(program, inputs, reference, out)
    return write_numerics(out)


def _lower(model: Any, inputs: tuple[Any, ...], backend: str) -> Any:
    import torch
    from executorch.exir import to_edge_transform_and_lower

    with without_partial_graph():
        exported = torch.export.export(model, inputs)
    if backend == "xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
            XnnpackPartitioner,
        )
        from executorch.backends.xnnpack.utils.configs import (
            get_xnnpack_edge_compile_config,
        )

        skip_patterns_no_graph_can_match()
        edge = to_edge_transform_and_lower(
            exported,
            partitioner=[XnnpackPartitioner()],
            compile_config=get_xnnpack_edge_compile_config(),
            generate_etrecord=True,
        )
    else:
        edge = to_edge_transform_and_lower(exported, generate_etrecord=True)
    return edge.to_executorch()


