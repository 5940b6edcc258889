"""The runner's command-line contract: its flags, the files it writes, the result line it prints.

One home for what `runners/etfarm_runner.cpp` and the host agree on (docs/how-to/runner.md;
docs/architecture.md, "Contracts"). The result line is checked against the invocation before
anything of it is kept (`parse_result`): a runner or device that prints garbage fails that
device as a data problem of the device, never `ok` with wrong numbers. In generation mode (an
LLM, `RunnerInvocation.generation`) the line's `llm` object is checked as well: one generation per
execution asked for, the prompt and length asked for, every decode step timed, tokens inside the
vocabulary; PSS lies between 0 and the peak RSS in every mode.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from functools import cache
from types import UnionType
from typing import Any, ClassVar, get_args, get_origin, get_type_hints

from orchestrator.artifacts.build import RUNNER_REL
from orchestrator.artifacts.generation import GenerationArgs, LlmRunFigures
from orchestrator.base.codec import Layout, encode
from orchestrator.base.errors import DataError
from orchestrator.results.contention import Contention
from orchestrator.results.footprint import RunnerMemory

__all__ = ["RUNNER_REL", "RunnerInvocation", "RunnerResult", "parse_result", "result_line"]

ETDUMP_NAME = "etdump.etdp"
OUTPUTS_NAME = "outputs.etft"
DEBUG_NAME = "debug_output.bin"
RUNNER_LOG = "runner.log"
RESULT_JSON = "result.json"
DEVICE_STATE_JSON = "device_state.json"
RESULT_PREFIX = "ETFARM_RESULT "
# Caps on what a result line may claim: beyond them a number is a device's garbage, not a measurement.
MAX_TIME_MS = 86_400_000.0  # one day, for any time (no process run may take longer)
MAX_BYTES = 1 << 50  # a petabyte, for any size in bytes or KiB
MAX_THREADS = 1 << 16
# Rounds of the runner's calibration workload (64x64 GEMM + 2 MiB of copies each) a process run asks for: none.
# The runner's own contention measure (results/contention.py) catches every run the workload flagged, per execution, at
# a hundredth of its cost (benchmarks/README.md "Contention"); `--calibration_rounds` stays in the runner.
CALIBRATION_ROUNDS = 0


@dataclass(frozen=True)
class RunnerInvocation:
    """What one process run asks of the runner; paths are absolute device paths."""

    runner: str
    model: str
    inputs: str | None
    out_dir: str
    iterations: int
    warmup: int
    traced: bool
    cpu_threads: int = 0
    intermediate_outputs: bool = False
    debug_buffer_size: int = 16 << 20
    calibration_rounds: int = CALIBRATION_ROUNDS
    generation: GenerationArgs | None = None  # an LLM: generate (prompt, length) instead of executing on inputs

    def argv(self) -> list[str]:
        argv = [self.runner, f"--model_path={self.model}", f"--num_executions={self.iterations}", f"--warmup={self.warmup}"]
        if self.traced:  # untraced runs attach no event tracer at all: that is their point
            argv += [f"--etdump_path={posixpath.join(self.out_dir, ETDUMP_NAME)}",
                     f"--output_file={posixpath.join(self.out_dir, OUTPUTS_NAME)}"]
        if self.generation is not None:  # traced or not: every process run generates
            argv += self.generation.argv()
        elif self.inputs:
            argv.append(f"--inputs={self.inputs}")
        if self.cpu_threads > 0:
            argv.append(f"--cpu_threads={self.cpu_threads}")
        if self.calibration_rounds > 0:
            argv.append(f"--calibration_rounds={self.calibration_rounds}")
        if self.traced and self.intermediate_outputs:
            argv += ["--dump_intermediate_outputs", f"--debug_buffer_size={self.debug_buffer_size}",
                     f"--debug_output_path={posixpath.join(self.out_dir, DEBUG_NAME)}"]
        return argv

    def expected_files(self) -> list[str]:
        """Files the runner was told to write: a missing one is a failure, never a skip."""
        if not self.traced:
            return []
        return [ETDUMP_NAME, OUTPUTS_NAME, *([DEBUG_NAME] if self.intermediate_outputs else [])]


@dataclass(frozen=True)
class RunnerResult:
    """The runner's `ETFARM_RESULT {json}` line, field for field as etfarm_runner.cpp prints it.

    Sizes the device could not measure are -1 (peak RSS without /proc, the .pte's size, the
    threadpool's size without one). `extra` holds keys this etfarm does not know (a newer runner),
    kept verbatim. Only `parse_result` builds one, after checking it against the invocation."""

    LAYOUT: ClassVar[Layout] = Layout(last=("runner_ms",))  # printed last; declared before the optional ones

    method: str
    load_ms: float
    program_load_ms: float
    warmup: int
    executions: int
    execute_ms: tuple[float, ...]
    etdump: bool
    cpu_threads: int
    debug_buffer_used: int
    debug_buffer_overflow: bool
    peak_rss_load_kb: int
    peak_rss_kb: int
    planned_memory_bytes: int
    program_bytes: int
    runner_ms: float
    calibration_rounds: int | None = None  # printed only when the calibration workload ran
    calibration_before_ms: float | None = None
    calibration_after_ms: float | None = None
    pss_load_kb: int | None = None  # PSS after the method load / after the measured executions (-1: unknown)
    pss_kb: int | None = None
    mode: str | None = None  # "forward" or "generate"
    llm: LlmRunFigures | None = None  # generation mode: the `llm` object (artifacts/generation.py)
    memory: RunnerMemory | None = None  # memory by owner (results/footprint.py), since issue 39
    contention: Contention | None = None  # what took the CPU away per execution (results/contention.py); older runners: None
    warmup_ms: tuple[float, ...] | None = None  # per warmup execution, as execute_ms; older runners: None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The line's JSON object again (what `result.json` keeps): absent fields stay absent."""
        out = {k: v for k, v in encode(self).items() if v is not None and k != "extra"}
        out.update(self.extra)
        return out


_TIMES = ("load_ms", "program_load_ms", "runner_ms", "calibration_before_ms", "calibration_after_ms")
_SIZES = {"debug_buffer_used": 0, "peak_rss_load_kb": -1, "peak_rss_kb": -1, "planned_memory_bytes": 0,
          "program_bytes": -1, "pss_load_kb": -1,
          "pss_kb": -1}  # field -> the least value it may take (-1: the device could not tell)


def result_line(stdout: str) -> dict[str, Any] | None:
    """The JSON object of the runner's last `ETFARM_RESULT` line, as printed; None when there is none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return _json_object(line[len(RESULT_PREFIX):])
    return None


def parse_result(stdout: str, invocation: RunnerInvocation, source: str = "runner") -> RunnerResult:
    """The runner's result, checked against its contract and what `invocation` asked for: types,
    finite non-negative times under MAX_TIME_MS, sizes under MAX_BYTES, as many executions as asked.

    Raises DataError naming `source` (the device, model and process run) and the problem."""
    try:
        data = result_line(stdout)
        if data is None:
            raise _Bad(f"printed no {RESULT_PREFIX.strip()} line (cut off, or past the output cap?)")
        return _checked(data, invocation)
    except _Bad as exc:
        raise DataError(f"{source}: the runner's result does not hold (a device-side problem): {exc}") from None


class _Bad(Exception):
    """Internal: one broken promise of the result line."""


def _json_object(text: str) -> dict[str, Any]:
    def refuse(token: str) -> Any:
        raise _Bad(f"its result line holds {token}, not a number")

    def number(token: str) -> float:
        value = float(token)
        if not math.isfinite(value):
            refuse(token)
        return value

    try:
        value = json.loads(text, parse_constant=refuse, parse_float=number)
    except json.JSONDecodeError as exc:
        raise _Bad(f"its result line is not JSON (truncated?): {exc}") from None
    except ValueError as exc:  # an integer of thousands of digits (Python's int conversion limit)
        raise _Bad(f"its result line holds a number JSON readers refuse ({str(exc)[:80]})") from None
    except RecursionError:
        raise _Bad("its result line nests too deep") from None
    if not isinstance(value, dict):
        raise _Bad(f"its result line is a JSON {type(value).__name__}, not an object")
    return value


def _checked(data: dict[str, Any], invocation: RunnerInvocation) -> RunnerResult:
    known = {f.name for f in fields(RunnerResult)} - {"extra"}
    values = {k: data[k] for k in known if k in data}
    llm = values.pop("llm", None)
    memory = values.pop("memory", None)
    contention = values.pop("contention", None)
    _check_types(values)
    for name in ("execute_ms", "warmup_ms"):
        bad = [ms for ms in values.get(name, []) if not 0.0 <= ms <= MAX_TIME_MS]
        if bad:
            raise _Bad(f"{name} holds {bad[0]!r}: every execution time must lie in [0, {MAX_TIME_MS:.0f}] ms")
    for name in _TIMES:
        if name in values and not 0.0 <= values[name] <= MAX_TIME_MS:
            raise _Bad(f"{name} is {values[name]!r}: a time must lie in [0, {MAX_TIME_MS:.0f}] ms")
    for name, least in _SIZES.items():
        if name in values and not least <= values[name] <= MAX_BYTES:
            raise _Bad(f"{name} is {values[name]!r}: outside [{least}, {MAX_BYTES}]")
    if "cpu_threads" in values and not -1 <= values["cpu_threads"] <= MAX_THREADS:
        raise _Bad(f"cpu_threads is {values['cpu_threads']!r}: outside [-1, {MAX_THREADS}]")
    _check_counts(values, invocation)
    _check_pss(values)
    values["llm"] = _checked_llm(values.get("mode"), llm, invocation)
    try:
        values["memory"] = None if memory is None else RunnerMemory.checked(memory)
        values["contention"] = None if contention is None else _checked_contention(contention, invocation.iterations)
    except ValueError as exc:
        raise _Bad(str(exc)) from None
    for name in ("execute_ms", "warmup_ms"):
        if name in values:
            values[name] = tuple(float(ms) + 0.0 for ms in values[name])  # + 0.0: a -0.0 is 0.0
    for name in _TIMES:
        if name in values:
            values[name] = float(values[name]) + 0.0
    return RunnerResult(**values, extra={k: v for k, v in data.items() if k not in known})


def _check_types(values: dict[str, Any]) -> None:
    missing = [f.name for f in fields(RunnerResult) if f.default is MISSING and f.default_factory is MISSING
               and f.name not in values]
    if missing:
        raise _Bad(f"it lacks {', '.join(missing)}")
    for name, value in values.items():
        want = _kinds()[name]
        if want is tuple:  # execute_ms, warmup_ms
            if not (isinstance(value, list) and all(_is(x, float) for x in value)):
                raise _Bad(f"{name} is {_show(value)}, not a list of numbers")
        elif not _is(value, want):
            raise _Bad(f"{name} is {_show(value)}, not {'a number' if want is float else want.__name__}")


@cache
def _kinds() -> dict[str, type]:
    """Each field's JSON kind, from its annotation: `int | None` -> int, `tuple[float, ...]` -> tuple."""
    kinds = {}
    for name, hint in get_type_hints(RunnerResult).items():
        args = [a for a in get_args(hint) if a is not type(None)]
        kind = args[0] if isinstance(hint, UnionType) else hint
        kinds[name] = get_origin(kind) or kind
    return kinds


def _check_counts(values: dict[str, Any], invocation: RunnerInvocation) -> None:
    asked = {"executions": invocation.iterations, "warmup": invocation.warmup}
    for name, want in asked.items():
        if values[name] != want:
            raise _Bad(f"{name} is {values[name]}, but {want} were asked for")
    if len(values["execute_ms"]) != invocation.iterations:
        raise _Bad(f"execute_ms holds {len(values['execute_ms'])} times for {invocation.iterations} executions")
    if "warmup_ms" in values and len(values["warmup_ms"]) != invocation.warmup:
        raise _Bad(f"warmup_ms holds {len(values['warmup_ms'])} times for {invocation.warmup} warmup executions")
    if values["etdump"] is not invocation.traced:
        raise _Bad(f"etdump is {values['etdump']}, but the run was {'' if invocation.traced else 'not '}traced")
    rounds = values.get("calibration_rounds")
    if invocation.calibration_rounds > 0 and (rounds != invocation.calibration_rounds
                                              or "calibration_before_ms" not in values
                                              or "calibration_after_ms" not in values):
        raise _Bad(f"calibration_rounds is {rounds}, but {invocation.calibration_rounds} were asked for, with both times")


_CONTENTION_FIGURES = {"cpu_ms": float, "wall_ms": float, "read_ms": float, "involuntary_switches": int,
                       "migrations": int, "threads": int}


def _checked_contention(raw: Any, executions: int) -> Contention:
    """The `contention` object (runners/etfarm_sched.h): one wait per execution (or none: unreadable), times in
    [0, MAX_TIME_MS], counts whole; -1 (the device could not read it) becomes None. ValueError says what is wrong."""
    if not isinstance(raw, dict):
        raise ValueError(f"contention is {_show(raw)}, not an object")
    waits = raw.get("wait_ms", [])
    if not isinstance(waits, list) or any(not _is(w, float) or not 0 <= w <= MAX_TIME_MS for w in waits):
        raise ValueError(f"contention.wait_ms is {_show(waits)}: not a list of times in [0, {MAX_TIME_MS:.0f}] ms")
    if waits and len(waits) != executions:
        raise ValueError(f"contention.wait_ms holds {len(waits)} waits for {executions} executions")
    figures: dict[str, Any] = {}
    for name, kind in _CONTENTION_FIGURES.items():
        value = raw.get(name, -1)
        if not _is(value, kind) or not -1 <= value <= (MAX_TIME_MS if kind is float else MAX_BYTES):
            raise ValueError(f"contention.{name} is {_show(value)}: not {'a time' if kind is float else 'a count'} or -1")
        figures[name] = None if value < 0 else kind(value) + kind(0)  # + 0.0: a -0.0 is 0.0
    return Contention(tuple(float(w) + 0.0 for w in waits), **figures)


def _check_pss(values: dict[str, Any]) -> None:
    """PSS counts a share of the resident pages: at most the peak RSS (read after it, runners/etfarm_runner.cpp)."""
    peak = values.get("peak_rss_kb", -1)
    for name in ("pss_load_kb", "pss_kb"):
        pss = values.get(name, -1)
        if pss >= 0 and peak >= 0 and pss > peak:
            raise _Bad(f"{name} is {pss} KiB, above the peak RSS of {peak} KiB")


def _checked_llm(mode: Any, raw: Any, invocation: RunnerInvocation) -> LlmRunFigures | None:
    """The `llm` object, typed, when generation was asked for (and absent when it was not)."""
    asked = invocation.generation
    if asked is None:
        if raw is not None or mode not in (None, "forward"):
            raise _Bad(f"it reports mode {mode!r} with generation figures, but no generation was asked for")
        return None
    if mode != "generate" or not isinstance(raw, dict):
        raise _Bad(f"mode is {mode!r} without an llm object, but a generation was asked for")
    try:
        figures = LlmRunFigures.from_json(raw)
    except DataError as exc:
        raise _Bad(str(exc)) from None
    problem = llm_problem(figures, asked, invocation.iterations)
    if problem:
        raise _Bad(f"llm: {problem}")
    return figures


def llm_problem(figures: LlmRunFigures, asked: GenerationArgs, executions: int) -> str | None:
    """What does not hold in a generation-mode result, None when everything does."""
    f = figures
    if len(f.generations) != executions:
        return f"{len(f.generations)} generations for {executions} executions"
    if asked.prompt_file is None and (f.prompt_len, f.prompt_seed) != (asked.prompt_len, asked.prompt_seed):
        return f"prompt of {f.prompt_len} tokens, seed {f.prompt_seed}; asked {asked.prompt_len}, seed {asked.prompt_seed}"
    if f.requested_gen_len != asked.gen_len or not 1 <= f.gen_len <= asked.gen_len or f.decode_steps != f.gen_len - 1:
        return (f"gen_len {f.gen_len} (requested {f.requested_gen_len}, decode_steps {f.decode_steps}) "
                f"for {asked.gen_len} asked")
    if len(f.prompt_tokens) != f.prompt_len or f.prefill_chunk < 1 or f.prefill_calls != -(-f.prompt_len // f.prefill_chunk):
        return f"{f.prefill_calls} prefill calls of up to {f.prefill_chunk} tokens for a {f.prompt_len}-token prompt"
    for k, g in enumerate(f.generations):
        times = (g.ttft_ms, g.prefill_ms, g.decode_ms, g.total_ms, *g.decode_step_ms)
        if any(not 0.0 <= t <= MAX_TIME_MS for t in times) or g.prefill_tokens_per_s < 0 or g.decode_tokens_per_s < 0:
            return f"generation {k}: a time or rate outside [0, {MAX_TIME_MS:.0f}] ms"
        if len(g.decode_step_ms) != f.decode_steps or len(g.tokens) != f.gen_len:
            return f"generation {k}: {len(g.decode_step_ms)} decode steps and {len(g.tokens)} tokens for {f.gen_len}"
        if any(not 0 <= t < f.vocab_size for t in g.tokens):
            return f"generation {k}: a token outside the vocabulary of {f.vocab_size}"
        if any(not -1 <= m <= MAX_BYTES for m in (g.rss_prefill_kb, g.pss_prefill_kb, g.rss_decode_kb, g.pss_decode_kb)):
            return f"generation {k}: a memory figure outside [-1, {MAX_BYTES}]"
    return None


def _is(value: Any, kind: type) -> bool:
    """JSON's types: a bool is not a number; an int is a float."""
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return isinstance(value, (int, float)) if kind is float else isinstance(value, kind)


def _show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
