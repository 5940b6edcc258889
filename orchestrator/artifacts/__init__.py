"""What a job runs: model specs, their export to .pte + ETRecord, runner builds per target, tensor files.

Public API, imported lazily on first use (PEP 562) so that importing the package stays light:
    modelspec: ModelSpec, parse_model_spec, parse_model_specs, load_factory_result
    lowering: BACKENDS, ExportedModel, export_model, copy_artifacts
    build: RunnerBuild, build_runner, runner_env
    targets: TARGETS, target_for_abi
    user_runtime: UserRuntime
    tensorfile: write_tensors, read_tensors
"""

from __future__ import annotations

from orchestrator.lazy import lazy_api

_API = {
    "ModelSpec": "modelspec",
    "parse_model_spec": "modelspec",
    "parse_model_specs": "modelspec",
    "load_factory_result": "modelspec",
    "BACKENDS": "lowering",
    "ExportedModel": "lowering",
    "export_model": "lowering",
    "copy_artifacts": "lowering",
    "RunnerBuild": "build",
    "build_runner": "build",
    "runner_env": "build",
    "TARGETS": "targets",
    "target_for_abi": "targets",
    "UserRuntime": "user_runtime",
    "write_tensors": "tensorfile",
    "read_tensors": "tensorfile",
}
__all__ = sorted(_API)

__getattr__ = lazy_api(__name__, _API)
