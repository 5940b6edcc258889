"""What a job runs: model specs, their export to .pte + ETRecord, runner builds per target, tensor files.

Public API, imported lazily on first use (PEP 562) so that importing the package stays light:
    modelspec: ModelSpec, parse_model_spec, parse_model_specs, load_factory_result
    llm: LlmRecipe, LlmReference, seeded_prompt, check_tokens
    pte_info: PteInfo, LlmShape, read_pte_info, check_program, unsupported_ops_message
    lowering: BACKENDS, ExportedModel, export_model, copy_artifacts
    build: RunnerBuild, build_runner, runner_env
    runner_info: RuntimeInfo, runner_slot
    targets: TARGETS, target_for_abi
    user_runtime: UserRuntime
    tensorfile: write_tensors, read_tensors
"""

from __future__ import annotations

from orchestrator.base.lazy import lazy_api

_API = {
    "ModelSpec": "modelspec",
    "parse_model_spec": "modelspec",
    "parse_model_specs": "modelspec",
    "load_factory_result": "modelspec",
    "LlmRecipe": "llm",
    "LlmReference": "llm",
    "seeded_prompt": "llm",
    "check_tokens": "llm",
    "PteInfo": "pte_info",
    "LlmShape": "pte_info",
    "read_pte_info": "pte_info",
    "check_program": "pte_info",
    "unsupported_ops_message": "pte_info",
    "BACKENDS": "lowering",
    "ExportedModel": "lowering",
    "export_model": "lowering",
    "copy_artifacts": "lowering",
    "RunnerBuild": "build",
    "build_runner": "build",
    "runner_env": "build",
    "RuntimeInfo": "runner_info",
    "runner_slot": "runner_info",
    "TARGETS": "targets",
    "target_for_abi": "targets",
    "UserRuntime": "user_runtime",
    "write_tensors": "tensorfile",
    "read_tensors": "tensorfile",
}
__all__ = sorted(_API)

__getattr__ = lazy_api(__name__, _API)
