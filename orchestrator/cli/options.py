"""Options shared by several commands, defined once: choices come from the stage that owns them.

`--backend` and `--target` are enums built from `artifacts.lowering.BACKENDS` and
`artifacts.targets.TARGETS`, so `--help` lists the choices and a wrong value is a usage error
before anything runs; `--config` reads ETFARM_CONFIG, and `--help` says so.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.artifacts.lowering import BACKENDS
from orchestrator.artifacts.recipes import recipe_help
from orchestrator.artifacts.targets import TARGETS
from orchestrator.results.limits import DEVICE_DEADLINE_S, LIMITS, MAX_RUNS_PER_SIDE
from orchestrator.verdicts.statistics import CENTER_HELP


# Every count and duration is bounded (results/limits.py): `--timeout inf` or `--runs 1e12` is a usage error.
def _most(field: str) -> float:
    return LIMITS[field][1]


Backend = StrEnum("Backend", {name: name for name in BACKENDS})  # type: ignore[misc]
Target = StrEnum("Target", {name: name for name in TARGETS})  # type: ignore[misc]

ConfigOption = Annotated[Path | None, typer.Option(
    envvar="ETFARM_CONFIG", help="Device inventory YAML (default ~/.config/etfarm/devices.yaml when present).")]
JunitOption = Annotated[Path | None, typer.Option(
    "--junit", metavar="FILE", help="Also write the verdicts as JUnit XML for CI test reporters: a testsuite per device, "
    "a testcase per (device, model) and per op that regressed; failure: regressed, wrong outputs, accuracy dropped; "
    "skipped: not judged (no data, new, inconclusive, settings differ).")]
# Commands that read the store (compare, nightly): where it is (store/location.py reads $ETFARM_STORE itself).
StoreOption = Annotated[Path | None, typer.Option(
    "--store", help="Results store (default $ETFARM_STORE, else $XDG_DATA_HOME/etfarm/results.db).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout (progress stays on stderr).")]

# Dask TLS (etfarm worker, run --scheduler, farm status): see orchestrator/farm/security.py.
SchedulerOption = Annotated[str | None, typer.Option(
    "--scheduler", envvar="ETFARM_SCHEDULER",
    help="Dask scheduler address (tcp://HOST:PORT or tls://HOST:PORT); default $ETFARM_SCHEDULER.")]
TlsCaOption = Annotated[Path | None, typer.Option(
    "--tls-ca-file", help="CA certificate for Dask TLS (with --tls-cert, --tls-key).")]
TlsCertOption = Annotated[Path | None, typer.Option("--tls-cert", help="This host's certificate for Dask TLS.")]
TlsKeyOption = Annotated[Path | None, typer.Option("--tls-key", help="The private key of --tls-cert.")]

# `etfarm run` (one alias per option keeps cli/run.py a list of names; the help is said here once).
ModelsOption = Annotated[list[str] | None, typer.Option(
    "--model", "-m", help="Model spec: file.py:factory, package.module:factory or a .pte. Repeatable; "
                          "required unless --resume.")]
DevicesOption = Annotated[str, typer.Option("--devices", "-d", help="Comma-separated device names from the inventory.")]
BackendOption = Annotated[Backend, typer.Option(help="Lowering backend.")]
def recipes_joined(values: list[str] | None) -> str | None:
    """`--recipe fp32 --recipe int8-static` is `--recipe fp32,int8-static`: every repetition kept (the last alone won)."""
    return ",".join(values) if values else None


RecipeOption = Annotated[list[str] | None, typer.Option(  # recipes_joined: one NAME[,NAME...] text
    "--recipe", metavar="NAME[,NAME...]", help=recipe_help() + " Repeatable.")]
RunsOption = Annotated[int, typer.Option(min=1, max=_most("runs"), help="Separate process runs per device and model.")]
IterationsOption = Annotated[int, typer.Option(min=1, max=_most("iterations"), help="Measured executions per process run.")]
WarmupOption = Annotated[int, typer.Option(min=0, max=_most("warmup"), help="Executions before measuring, not recorded.")]
OutOption = Annotated[Path | None, typer.Option(help="Run directory (default ./etfarm-runs/<run id>).")]
NamesOption = Annotated[list[str] | None, typer.Option(
    help="Model name in reports; repeatable, one per --model, in order (default: the file's name; "
         "factories of one file: <file>-<factory>).")]
ThreadsOption = Annotated[str, typer.Option(
    metavar="N[,N...]", help="CPU threads for the runner (0: device default); a list (1,2,4) sweeps: one model per value.")]
PromptLenOption = Annotated[str | None, typer.Option(
    "--prompt-len", metavar="P[,P...]", help="LLMs: prompt tokens per generation; a list (32,128) sweeps "
                                             "(default: a prompt the eager reference covers, else 32).")]
GenLenOption = Annotated[str | None, typer.Option(
    "--gen-len", metavar="N[,N...]", help="LLMs: tokens generated per generation; a list sweeps "
                                          "(default: the eager reference's, else 32).")]
TimeoutOption = Annotated[float, typer.Option(min=1, max=_most("run_timeout_s"), help="Deadline in seconds for one process run.")]
NoWaitOption = Annotated[bool, typer.Option("--no-wait", help="Fail instead of waiting when a device is locked.")]
LockTimeoutOption = Annotated[float | None, typer.Option(
    min=0, max=_most("lock_timeout_s"),
    help="Give up on a device still locked by another job after this many seconds (default: wait).")]
UntracedRunsOption = Annotated[int, typer.Option(
    min=0, max=_most("untraced_runs"), help="Extra runs without the event tracer, for end-to-end time and tracer overhead.")]
CooldownOption = Annotated[float, typer.Option(min=0, max=_most("cooldown_s"), help="Seconds to pause before each process run.")]
MaxTempOption = Annotated[float | None, typer.Option(
    min=LIMITS["max_temp_c"][0], max=_most("max_temp_c"),
    help="Before each run, wait until the device's hottest zone is at most this many °C.")]
OrderOption = Annotated[str, typer.Option(
    help="How the models' process runs follow each other on a device: interleaved (seeded shuffle of rounds) "
         "or sequential.")]
SeedOption = Annotated[int, typer.Option(min=0, max=_most("seed"), help="Seed of the interleaved order.")]
IntermediateOutputsOption = Annotated[bool, typer.Option(
    "--intermediate-outputs", help="Also dump intermediate outputs (debug buffer sized from the model).")]
NumericsOption = Annotated[bool, typer.Option(
    "--numerics", help="Dump intermediate outputs and report which ops diverge from the AOT reference and "
                       "between devices (see `etfarm numerics`).")]
EnergyOption = Annotated[bool, typer.Option(
    "--energy", help="After the process runs, measure energy per inference with the device's power sensor "
                     "(ODPM, Pi 5 PMIC, RAPL, hwmon): idle, then untraced executions; see "
                     "docs/guide/memory-and-energy.md.")]
EnergySecondsOption = Annotated[float, typer.Option(
    "--energy-seconds", min=LIMITS["energy_s"][0], max=_most("energy_s"),
    help="With --energy: each phase's executions last at least this long (and a power sensor's 100 periods).")]
EnergyPhasesOption = Annotated[int, typer.Option(
    "--energy-phases", min=1, max=_most("energy_phases"), help="With --energy: repeated phases, for an interval.")]
QuietOption = Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")]
AbOption = Annotated[tuple[str, str] | None, typer.Option(
    "--ab", metavar="SPEC_A SPEC_B",
    help="A/B comparison: run two model specs interleaved A B B A on each device, then print B's verdict "
         "against A per device and op (exit 1 on a regression).")]
ThresholdOption = Annotated[float, typer.Option(
    min=0, max=100, help="With --ab: practical size of an end-to-end regression, in percent.")]
OpThresholdOption = Annotated[float, typer.Option(
    min=0, max=100, help="With --ab: practical size of a per-op regression, in percent.")]
CenterOption = Annotated[str, typer.Option(help=f"With --ab: {CENTER_HELP}")]
UntilConfidentOption = Annotated[bool, typer.Option(
    "--until-confident", help="With --ab (the default): while a device's verdict is inconclusive, run --runs more "
                              "process runs per side (a further job, pooled) until decided or --max-runs is reached. "
                              "On recorded quiet jobs of two VMs, one job of 10 runs a side found +10 % in 38-75 % "
                              "of pairs, pooling up to 80 runs a side in 92-100 % (docs/guide/trust.md).")]
OnceOption = Annotated[bool, typer.Option(
    "--once", help="With --ab: one job, no further runs while a verdict is inconclusive.")]
MaxRunsOption = Annotated[int, typer.Option(
    min=1, max=MAX_RUNS_PER_SIDE[1], help="With --until-confident: most process runs per side.")]
RunStoreOption = Annotated[Path | None, typer.Option(
    "--store", envvar="ETFARM_STORE",
    help="Results store to record the run in (default $ETFARM_STORE, else $XDG_DATA_HOME/etfarm/results.db).")]
NoStoreOption = Annotated[bool, typer.Option("--no-store", help="Do not record the run in the results store.")]
RunVerboseOption = Annotated[bool, typer.Option(
    "--verbose", "-v", help="Also log device commands on stderr (always in DIR/etfarm.log).")]
NoReportOption = Annotated[bool, typer.Option("--no-report", help="Do not write DIR/report.html.")]
DeviceDeadlineOption = Annotated[float, typer.Option(
    min=1, max=DEVICE_DEADLINE_S[1],
    help="With --scheduler: fail a device's tasks after this many seconds with no worker offering it.")]
ResumeOption = Annotated[Path | None, typer.Option(
    "--resume", help="Finish an interrupted or failed run DIR: run only the missing (device, model, run) "
                     "with its recorded settings, in DIR, under the same run id. Options that differ from "
                     "the recorded ones are refused. A run made with --scheduler resumes on its farm "
                     "(the recorded scheduler, or --scheduler if it moved).")]
