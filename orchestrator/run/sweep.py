"""A job's models as the runner will run them: each program checked, LLMs recognised, sweeps expanded.

Before anything is pushed (docs/architecture.md, "LLMs" and "Contracts: model spec"), every
exported or given program is checked (`pte_info.check_program`: a whole ET12 program with the
method the runner runs, no operators the runtime lacks; for a given .pte, the files beside it are of
it: run/belonging.py) and read: a KV-cache LLM (`PteInfo.llm`)
is profiled by generation, whatever made it. Then each model becomes one model per point of the
job's sweep (`RunOptions.thread_counts`, `prompt_lens`, `gen_lens`: `--threads`, `--prompt-len`,
`--gen-len` lists), named after the point where a list has several values (`tiny_llama-p32`,
`tiny_llama-p128`; `tiny_cnn-t1`, `tiny_cnn-t2`), so each point is a process-run group of its own
with its own statistics, verification and verdicts. The prompt and generation lengths apply to
LLMs only. Without lists, an LLM generates the eager reference's default (a prompt the reference
covers, its `gen_len`), else a 32-token prompt and 32 tokens, kept inside the program's context.
A resumed job expands the same way from its recorded settings.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from orchestrator.artifacts.generation import DEFAULT_GEN_LEN, DEFAULT_PROMPT_LEN, GenerationArgs, Workload
from orchestrator.artifacts.llm import LlmReference
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.artifacts.pte_info import LlmShape, check_program
from orchestrator.errors import UsageError
from orchestrator.run.belonging import check_beside
from orchestrator.run.job_config import RunOptions

Point = tuple[ExportedModel, int]  # a model of the job, and the index of the spec it came from


def sweep_models(models: Sequence[ExportedModel], options: RunOptions, *, custom_ops: bool = False) -> list[Point]:
    """Every model checked and expanded into its sweep points, in order; a usage or data error (exit 2)
    before anything runs when a program cannot run or a point does not fit it."""
    points: list[Point] = []
    any_llm = False
    for index, model in enumerate(models):
        info = check_program(model.pte, custom_ops=custom_ops)
        if model.given:  # files found beside a .pte: of its program, or refused before any device is contacted
            check_beside(model, info)
        shape = info.llm
        any_llm |= shape is not None
        if shape is not None and (options.intermediate_outputs or options.numerics):
            raise UsageError(f"{model.name} is an LLM program (it generates): --numerics and --intermediate-outputs "
                             "apply to models executed on their inputs")
        generations = _generations(model, shape, options) if shape is not None else [None]
        for threads, generation in itertools.product(options.thread_counts or (0,), generations):
            workload = Workload(threads, generation)
            points.append((replace(model, name=_name(model.name, workload, options), workload=workload), index))
    if (options.prompt_lens or options.gen_lens) and not any_llm:
        raise UsageError("--prompt-len and --gen-len apply to LLM programs (a KV-cache forward(tokens, input_pos) "
                         "with get_max_seq_len, get_vocab_size, use_kv_cache); no model of this job is one")
    clashes = [name for name, count in Counter(m.name for m, _ in points).items() if count > 1]
    if clashes:
        raise UsageError(f"the sweep names two models {clashes[0]!r}; give the models other names (--name)")
    return points


def _generations(model: ExportedModel, shape: LlmShape, options: RunOptions) -> list[GenerationArgs]:
    reference = LlmReference.load(model.llm_reference) if model.llm_reference is not None else None
    context = shape.max_context_len
    prompts = options.prompt_lens or (_default_prompt(reference, context),)
    out = []
    for prompt in prompts:
        if not 1 <= prompt <= context:  # no generation length could fit: say so, not a negative count of tokens
            raise UsageError(f"{model.name}: a {prompt}-token prompt does not fit its context of {context} positions")
        lengths = options.gen_lens or (min(reference.gen_len if reference else DEFAULT_GEN_LEN, context - prompt + 1),)
        for gen_len in lengths:
            if prompt < 1 or gen_len < 1 or prompt + gen_len - 1 > context:
                raise UsageError(f"{model.name}: a {prompt}-token prompt and {gen_len} generated tokens do not fit "
                                 f"its context of {context} positions (prompt + tokens - 1 at most)")
            out.append(GenerationArgs(prompt, gen_len, reference.prompt_seed if reference else 0))
    return out


def _default_prompt(reference: LlmReference | None, context: int) -> int:
    """The reference's prompt nearest 32 tokens (so tokens are verified), else 32 (half the context at most)."""
    covered = [g.prompt_len for g in reference.generations if g.prompt_len < context] if reference else []
    if covered:
        return min(covered, key=lambda p: (abs(p - DEFAULT_PROMPT_LEN), -p))
    return max(1, min(DEFAULT_PROMPT_LEN, context // 2))


def _name(base: str, workload: Workload, options: RunOptions) -> str:
    """The model's name at a point: a suffix per list of several values."""
    suffix = ""
    if len(options.thread_counts) > 1:
        suffix += f"-t{workload.threads}"
    if workload.generation is not None and len(options.prompt_lens) > 1:
        suffix += f"-p{workload.generation.prompt_len}"
    if workload.generation is not None and len(options.gen_lens) > 1:
        suffix += f"-g{workload.generation.gen_len}"
    return base + suffix
