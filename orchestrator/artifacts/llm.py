"""LLMs as model specs: the recipe a model file returns, seeded prompts, and the eager reference.

A model file declares an LLM by returning an `LlmRecipe` from its factory instead of
`(module, inputs)` (`configs/models/tiny_llama.py`). etfarm then exports it with ExecuTorch's own
`python -m executorch.examples.models.llama.export_llama ... -kv -X -d fp32` (llm_export.py),
cached by content like every export, from a seeded random checkpoint, and records the eager
model's greedy tokens for the recipe's prompts (`llm_reference.json` beside the .pte), so the
tokens a device generates can be verified. Everything else keeps the (module, inputs) contract.

Torch-free: model files import `LlmRecipe` without importing torch, and the host verifies tokens
without it. A prompt is token ids, no tokenizer: `seeded_prompt` is the runner's generator
(`runners/etfarm_llm.h`), bit for bit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from orchestrator.base.codec import Layout, decode
from orchestrator.base.errors import DataError, ModelSpecError

REFERENCE_FORMAT = "etfarm-llm-reference/1"
REQUIRED_PARAMS = ("dim", "n_layers", "n_heads", "vocab_size")
# Flags etfarm sets itself; a recipe's export_args may not repeat them.
MANAGED_FLAGS = frozenset({"--model", "--params", "-p", "--checkpoint", "-c", "-kv", "--use_kv_cache", "-X", "--xnnpack",
                           "-d", "--dtype-override", "--max_seq_length", "--max_context_length", "-n",
                           "--output_name", "-o", "--output-dir", "--generate_etrecord"})
DTYPES = ("fp32", "fp16", "bf16")
_MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class LlmRecipe:
    """An LLM for etfarm to export with ExecuTorch's export_llama, with seeded random weights.

    params: the model's params.json (ExecuTorch's ModelArgs: dim, n_layers, n_heads, n_kv_heads,
        vocab_size, multiple_of, norm_eps, rope_theta, ...).
    seed: seeds the random checkpoint (a state_dict saved before export: without one, export_llama
        leaves the model partly uninitialised and every token comes out 0).
    export_args: more export_llama flags (e.g. ("-qmode", "8da4w", "-G", "32")); not the ones
        etfarm sets (MANAGED_FLAGS). With "--use_sdpa_with_kv_cache" the program needs llama:: ops
        the wheel's runtime lacks, and etfarm refuses to run it.
    prompt_lens, prompt_seed: the seeded prompts the eager reference covers; gen_len: the default
        generation length of a run (the reference covers every length up to the context).
    For real weights, export with export_llama yourself and give etfarm the .pte.
    """

    params: Mapping[str, Any]
    model: str = "llama3"
    seed: int = 0
    max_seq_len: int = 128
    max_context_len: int | None = None  # None: max_seq_len
    dtype: str = "fp32"
    export_args: tuple[str, ...] = ()
    prompt_lens: tuple[int, ...] = (32,)
    prompt_seed: int = 0
    gen_len: int = 32

    def __post_init__(self) -> None:
        missing = [k for k in REQUIRED_PARAMS if not isinstance(self.params.get(k), int)]
        if missing:
            raise ModelSpecError(f"LlmRecipe.params needs integer {', '.join(missing)}")
        if self.dtype not in DTYPES:
            raise ModelSpecError(f"LlmRecipe.dtype {self.dtype!r}: choose one of {', '.join(DTYPES)}")
        if self.max_seq_len < 2 or self.context_len < self.max_seq_len:
            raise ModelSpecError("LlmRecipe: max_seq_len must be at least 2 and max_context_len at least max_seq_len")
        clash = sorted(a.split("=")[0] for a in self.export_args if a.split("=")[0] in MANAGED_FLAGS)
        if clash:
            raise ModelSpecError(f"LlmRecipe.export_args: etfarm sets {', '.join(clash)} itself")
        bad = [p for p in self.prompt_lens if not 1 <= p < self.context_len]
        if not self.prompt_lens or bad or self.gen_len < 1 or self.prompt_seed < 0:
            raise ModelSpecError(f"LlmRecipe: prompt_lens must lie in [1, {self.context_len}), gen_len >= 1, prompt_seed >= 0")

    @property
    def context_len(self) -> int:
        return self.max_context_len or self.max_seq_len

    def export_argv(self, params: Path, checkpoint: Path, output: Path, backend: str) -> list[str]:
        """export_llama's arguments (after `python -m executorch.examples.models.llama.export_llama`);
        the ETRecord lands beside `output` as etrecord.bin."""
        argv = ["--model", self.model, "--params", str(params), "--checkpoint", str(checkpoint), "-kv",
                "-d", self.dtype, "--max_seq_length", str(self.max_seq_len),
                "--max_context_length", str(self.context_len), "-n", str(output), "--generate_etrecord"]
        if backend == "xnnpack":
            argv.append("-X")
        return argv + list(self.export_args)


def seeded_prompt(seed: int, length: int, vocab_size: int) -> list[int]:
    """The runner's seeded prompt: token i = 1 + splitmix64_i(seed) mod (vocab - 1)."""
    if vocab_size < 2:
        raise ValueError("vocab_size must be at least 2")
    state, ids = seed & _MASK64, []
    for _ in range(length):
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        z ^= z >> 31
        ids.append(1 + z % (vocab_size - 1))
    return ids


@dataclass(frozen=True)
class ReferenceGeneration:
    prompt_len: int
    prompt_tokens: tuple[int, ...]
    tokens: tuple[int, ...]  # eager greedy tokens, up to the context's end


@dataclass(frozen=True)
class LlmReference:
    """The eager model's greedy tokens for a recipe's prompts (`llm_reference.json`)."""

    prompt_seed: int
    gen_len: int  # the recipe's default generation length
    generations: tuple[ReferenceGeneration, ...]

    FORMAT: ClassVar[str] = REFERENCE_FORMAT  # written first: a file of another format is refused
    LAYOUT: ClassVar[Layout] = Layout(derived=(("format", "FORMAT"),), order=("format",))

    def for_prompt(self, prompt_tokens: Sequence[int]) -> ReferenceGeneration | None:
        return next((g for g in self.generations if g.prompt_tokens == tuple(prompt_tokens)), None)

    @classmethod
    def load(cls, path: Path | str) -> LlmReference:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
            if data.get("format") != REFERENCE_FORMAT:
                raise ValueError(f"format {data.get('format')!r}, expected {REFERENCE_FORMAT!r}")
            return decode(cls, data)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataError(f"{path}: not an etfarm LLM reference ({exc})") from None


@dataclass(frozen=True)
class TokenCheck:
    """Generated tokens against the eager reference: equal on the first `compared` tokens, or the
    first position where they differ."""

    compared: int
    first_mismatch: int | None  # index into the generated tokens
    expected: tuple[int, ...]
    got: tuple[int, ...]

    @property
    def ok(self) -> bool:
        return self.first_mismatch is None and self.compared > 0


def check_tokens(reference: LlmReference, prompt_tokens: Sequence[int], tokens: Sequence[int]) -> TokenCheck | None:
    """Compare a device's generated tokens with the reference for the same prompt; None when the
    reference has no generation for that prompt (nothing to verify against)."""
    ref = reference.for_prompt(prompt_tokens)
    if ref is None:
        return None
    n = min(len(tokens), len(ref.tokens))
    expected, got = ref.tokens[:n], tuple(int(t) for t in tokens[:n])
    mismatch = next((i for i in range(n) if expected[i] != got[i]), None)
    return TokenCheck(n, mismatch, expected, got)
