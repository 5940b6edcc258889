"""Staging: the runner, its libraries, the step scripts and every model of the job, in one go.

Two device commands whatever the number of files (hash what is there, then finalize what was
pushed): files already on the device with the same sha256 are not sent (`staged nothing`).
Models go under `models/<key prefix>` (the export's content hash), so two versions of a model never
collide and the models of a sweep (or two names of one file) share one staged program.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from device_agents.base import DeviceAgent
from device_agents.step import step_files
from orchestrator.artifacts.build import RunnerBuild
from orchestrator.artifacts.lowering import ExportedModel

Staged = dict[str, tuple[str, str | None]]  # model name -> (.pte, inputs) relative to the workdir


class Stager:
    def __init__(self, build: RunnerBuild, models: Sequence[ExportedModel], say: Callable[[str], None]) -> None:
        self.build = build
        self.models = models
        self.say = say

    def stage(self, agent: DeviceAgent) -> Staged:
        files = {**self.build.stage_files(), **step_files()}
        staged: Staged = {}
        for model in self.models:
            model_rel = f"models/{model.key[:16]}.pte"  # by content: a sweep's points share one program
            files[model_rel] = model.pte
            inputs_rel = None
            if model.inputs is not None:
                inputs_rel = f"models/{model.key[:16]}.inputs.etft"
                files[inputs_rel] = model.inputs
            staged[model.name] = (model_rel, inputs_rel)
        report = agent.stage(files)
        self.say(staged_line("runner and models", report.pushed, report.skipped, report.bytes_pushed))
        return staged


def staged_line(what: str, pushed: Sequence[str], skipped: Sequence[str], nbytes: int) -> str:
    if not pushed:
        return f"{what}: staged nothing ({len(skipped)} file(s) unchanged on the device)"
    return f"{what}: pushed {len(pushed)} file(s), {nbytes / 1e6:.1f} MB ({len(skipped)} unchanged)"
