"""The energy phase of a device (`etfarm run --energy`): after the process runs, per model, idle then busy.

One device command finds the sensor (sensors.DETECT_COMMAND); none gives every model `available:
false` with the reason. Otherwise each model gets `phases` device commands, each one: settle 1 s,
sample the sensor for the idle time (nothing of ours running), then start the runner without the
event tracer or the calibration for enough executions to last energy_s at the model's median speed (a power
sensor's: max(energy_s, 100 sensor periods)), sampling until it exits. The samples go back in the command's output (`@@ <ns>`
before each reading), then the runner's result line, so the executions counted are the runner's own.
A phase that fails makes the model's energy unavailable with the reason; the job goes on.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from device_agents.base import DeviceAgent
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.base.errors import EtfarmError
from orchestrator.base.stats import median
from orchestrator.results.energy_figures import ModelEnergy
from orchestrator.results.job_config import JobOptions
from orchestrator.results.model import DeviceResult
from orchestrator.run.device.stager import Staged
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.energy.integrate import PhaseSamples, Sample, summarize
from orchestrator.run.energy.sensors import DETECT_COMMAND, NO_SENSOR, SENSORS, Kind, Sensor
from orchestrator.run.loop.launch import Launch
from orchestrator.run.runner_contract import RunnerInvocation, parse_result
from orchestrator.run.schedule import Order

__all__ = ["EnergyPlan", "detect_sensor", "device_energy", "measure_model", "record_energy", "script"]

DETECT_TIMEOUT_S = 30.0
SETTLE_S = 1.0
# A power sensor is integrated over its snapshots, so the executions span at least this many of its periods; a
# counter's energy is exact between two readings, so for one the user's --energy-seconds alone decides.
MIN_SAMPLES = 100


@dataclass(frozen=True)
class EnergyPlan:
    """One model's phase: what the runner is asked, how long idle lasts."""

    invocation: RunnerInvocation
    idle_s: float
    active_s: float


def detect_sensor(agent: DeviceAgent) -> Sensor | str:
    """The device's sensor, or why there is none (one device command)."""
    try:
        result = agent.exec_raw(f"sh -c {shlex.quote(DETECT_COMMAND)}", DETECT_TIMEOUT_S).decoded()
    except EtfarmError as exc:
        return f"could not look for a power sensor: {exc}"
    name = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "none"
    return SENSORS.get(name, NO_SENSOR)


def plan_for(options: JobOptions, sensor: Sensor, invocation: RunnerInvocation, median_ms: float) -> EnergyPlan:
    """Executions enough for energy_s (a power sensor's: max(energy_s, 100 periods)) at `median_ms` each; idle for
    half that, 3 s at least."""
    floor_s = MIN_SAMPLES * sensor.period_s if sensor.kind is Kind.POWER else 0.0
    active_s = max(options.energy_s, floor_s)
    executions = max(1, math.ceil(active_s * 1000.0 / max(median_ms, 1e-3)))
    executions = min(executions, 1_000_000)
    return EnergyPlan(replace(invocation, iterations=executions, traced=False, calibration_rounds=0),
                      max(3.0, active_s / 2), active_s)


def script(sensor: Sensor, runner_command: str, idle_s: float) -> str:
    """The phase's /bin/sh script: idle samples, a marker, the runner in the background sampled until it exits."""
    period = f"{sensor.period_s:g}"
    idle_n = max(2, math.ceil(idle_s / sensor.period_s))
    read = f"S() {{ echo \"@@ $(date +%s%N)\"; {sensor.command}; }}"
    return (f"{read}; sleep {SETTLE_S:g}; i=0; while [ $i -lt {idle_n} ]; do S; sleep {period}; i=$((i+1)); done; "
            f"S; echo '@@ START'; o=$(mktemp); {runner_command} >\"$o\" 2>&1 & p=$!; "
            f"while kill -0 $p 2>/dev/null; do S; sleep {period}; done; wait $p; rc=$?; S; "
            f"echo \"@@ EXIT $rc\"; cat \"$o\"; rm -f \"$o\"")


def parse_phase(stdout: str, sensor: Sensor) -> tuple[PhaseSamples, int, str]:
    """The samples of a phase's output (idle, active), the runner's exit code and its output."""
    lines = stdout.splitlines()
    end = next((k for k, line in enumerate(lines) if line.startswith("@@ EXIT ")), None)
    if end is None:
        raise ValueError("the phase's output ends before the runner's exit status")
    parts: list[list[Sample]] = [[], []]  # idle, active
    part, stamp, text = 0, None, []
    for line in [*lines[:end], "@@ END"]:
        if not line.startswith("@@ "):
            text.append(line)
            continue
        if stamp is not None:
            parts[part].append(Sample(stamp, sensor.parse("\n".join(text))))
        stamp, text = None, []
        if line == "@@ START":
            part = 1
            parts[1] += parts[0][-1:]  # the active stretch starts at the last idle reading
        elif line[3:].isdigit():
            stamp = int(line[3:]) / 1e9
    return PhaseSamples(tuple(parts[0]), tuple(parts[1]), 0), int(lines[end].split()[2]), "\n".join(lines[end + 1:])


def measure_model(agent: DeviceAgent, launch: Launch, sensor: Sensor, plan: EnergyPlan, phases: int,
                  tokens_per_inference: int | None, say: Callable[[str], None]) -> ModelEnergy:
    """The model's energy over `phases` phases, or why it could not be measured."""
    argv = [*launch.launcher, *plan.invocation.argv()]
    runner = shlex.join(agent.command_words(argv, env=launch.env, prefix=launch.prefix, use_exec_prefix=True))
    command = f"sh -c {shlex.quote(script(sensor, runner, plan.idle_s))}"
    timeout_s = SETTLE_S + plan.idle_s + 3 * plan.active_s + 120.0
    measured: list[PhaseSamples] = []
    try:
        for _ in range(phases):
            result = agent.exec_raw(command, timeout_s).decoded()
            samples, rc, output = parse_phase(result.stdout, sensor)
            if rc != 0:
                return ModelEnergy.unavailable(f"the runner failed in the energy phase (exit {rc}): "
                                               f"{output.strip()[-300:]}", sensor.name)
            ran = parse_result(output, plan.invocation, source=f"[{agent.spec.name}] energy phase")
            measured.append(replace(samples, executions=ran.executions))
        energy = summarize(measured, sensor.kind, sensor.name, sensor.period_s, tokens_per_inference)
    except (EtfarmError, ValueError) as exc:
        return ModelEnergy.unavailable(f"the energy phase failed: {exc}", sensor.name)
    say(f"energy ({sensor.name}): {energy.uj_per_inference:.1f} uJ per inference, {energy.mw:.1f} mW above idle")
    return energy


def device_energy(agent: DeviceAgent, launch: Launch, options: JobOptions, models: Sequence[ExportedModel],
                  staged: Staged, order: Order, say: Callable[[str], None]) -> dict[str, ModelEnergy]:
    """Every model's energy on the device, after its process runs (`order`: what ran, by model)."""
    sensor = detect_sensor(agent)
    if isinstance(sensor, str):
        say(f"energy: not available: {sensor}")
        return {model.name: ModelEnergy.unavailable(sensor) for model in models}
    out = {}
    for model in models:
        runs = [run for name, run in order if name == model.name]
        if not runs or model.name not in staged:
            out[model.name] = ModelEnergy.unavailable("no finished process run to size the energy phase by",
                                                      sensor.name)
            continue
        untraced = [ms for r in runs if not r.traced for ms in r.execute_ms]
        speed = median_ms(untraced or [ms for r in runs for ms in r.execute_ms])
        model_rel, inputs_rel = staged[model.name]
        base = RunnerInvocation(runner=launch.runner, model=agent.remote_path(model_rel),
                                inputs=agent.remote_path(inputs_rel) if inputs_rel else None,
                                out_dir=agent.remote_path(f"out/{model.name}/energy"), iterations=1,
                                warmup=options.warmup, traced=False,
                                cpu_threads=model.workload.threads or options.cpu_threads or agent.spec.threads,
                                generation=model.workload.generation)
        plan = plan_for(options, sensor, base, speed)
        tokens = next((r.llm.gen_len for r in runs if r.llm is not None), None)
        say(f"{model.name}: energy phase ({sensor.name}): {options.energy_phases} x ({plan.idle_s:.0f} s idle + "
            f"{plan.invocation.iterations} executions, about {plan.active_s:.0f} s)")
        out[model.name] = measure_model(agent, launch, sensor, plan, options.energy_phases, tokens, say)
    return out


def median_ms(execute_ms: Sequence[float]) -> float:
    return median(execute_ms) or 1.0


def record_energy(record: DeviceRecord, energies: dict[str, ModelEnergy]) -> None:
    """Each measured model's energy into its recorded result."""
    def change(device: DeviceResult) -> DeviceResult:
        for name, energy in energies.items():
            model = device.model(name)
            device = device if model is None else device.with_model(replace(model, energy=energy))
        return device

    if energies:
        record.update(change)
