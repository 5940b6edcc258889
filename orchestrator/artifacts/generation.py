"""The runner's generation mode, as the host sees it: the flags that ask for it and the typed
figures of its result line's `llm` object (keys documented in `runners/etfarm_result.h`).

A generation is prefill (`prefill_calls` forward calls over the prompt) then `decode_steps`
forward calls of one token each. With an event tracer every forward call is one ETDump block, so
the k-th measured call of a process run (the k-th instance of the `Execute` block, counting from
0 after the method-load block) is in phase `phase_of_call(k, prefill_calls, decode_steps)`.
Inspector merges those blocks into one event block whose samples are in call order.

A `Workload` is what a model's process runs ask of the runner: one point of a job's sweep
(`--threads`, `--prompt-len`, `--gen-len` lists: run/engine/sweep.py), with `GenerationArgs` for an LLM.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from orchestrator.base.codec import FieldError, Layout, decode
from orchestrator.base.errors import DataError

PREFILL, DECODE = "prefill", "decode"
DEFAULT_PROMPT_LEN = 32  # the runner's defaults (runners/etfarm_args.h)
DEFAULT_GEN_LEN = 32


@dataclass(frozen=True)
class GenerationArgs:
    """What to generate in one process run: a seeded prompt (or a prompt file on the device)."""

    prompt_len: int = DEFAULT_PROMPT_LEN
    gen_len: int = DEFAULT_GEN_LEN
    prompt_seed: int = 0
    prompt_file: str | None = None  # device path of an ETFT file of token ids; replaces the seeded prompt

    def argv(self) -> list[str]:
        """Runner flags, added to a process run's argv (the runner then counts --warmup and
        --num_executions in generations, and writes the last generation's tokens to --output_file)."""
        if self.prompt_file:
            return ["--generate", f"--prompt_file={self.prompt_file}", f"--gen_len={self.gen_len}"]
        return ["--generate", f"--prompt_len={self.prompt_len}", f"--prompt_seed={self.prompt_seed}",
                f"--gen_len={self.gen_len}"]


@dataclass(frozen=True)
class Workload:
    """One sweep point of a model: CPU threads (0: the job's --threads, else the device's default) and,
    for an LLM, what to generate (None: execute `forward` on the model's inputs)."""

    threads: int = 0
    generation: GenerationArgs | None = None


@dataclass(frozen=True)
class GenerationFigures:
    """One measured generation (times in ms, memory in KiB, -1 where the device cannot tell)."""

    ttft_ms: float
    prefill_ms: float
    prefill_tokens_per_s: float
    decode_ms: float
    decode_tokens_per_s: float
    decode_step_ms: tuple[float, ...]
    total_ms: float
    rss_prefill_kb: int
    pss_prefill_kb: int
    rss_decode_kb: int
    pss_decode_kb: int
    tokens: tuple[int, ...]

    LAYOUT: ClassVar[Layout] = Layout(strict=True)  # the runner writes every key


@dataclass(frozen=True)
class LlmRunFigures:
    """The `llm` object of a generation-mode result line."""

    max_seq_len: int
    max_context_len: int
    vocab_size: int
    dynamic_shape: bool
    prefill_chunk: int
    prefill_calls: int
    prompt_len: int
    prompt_seed: int | None  # None: the prompt came from a file
    prompt_tokens: tuple[int, ...]
    gen_len: int
    requested_gen_len: int
    decode_steps: int
    generations: tuple[GenerationFigures, ...]

    LAYOUT: ClassVar[Layout] = Layout(strict=True)

    @property
    def calls_per_generation(self) -> int:
        return self.prefill_calls + self.decode_steps

    def phase_of_call(self, call: int) -> str:
        return phase_of_call(call, self.prefill_calls, self.decode_steps)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> LlmRunFigures:
        """Typed figures from a result line's `llm` object, read by the codec as the manifest reads them; DataError
        naming the key when it is malformed."""
        try:
            return decode(cls, obj)
        except FieldError as exc:
            raise DataError(f"the runner's llm figures are malformed ({exc})") from None


def phase_of_call(call: int, prefill_calls: int, decode_steps: int) -> str:
    """PREFILL or DECODE for the `call`-th measured forward call of a process run (0-based)."""
    return PREFILL if call % (prefill_calls + decode_steps) < prefill_calls else DECODE


