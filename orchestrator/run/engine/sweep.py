"""A job's models as the runner will run them: each program checked, LLMs recognised, sweeps expanded.

Before anything is pushed (docs/architecture.md, "LLMs" and "Contracts: model spec"), every
exported or given program is checked (`pte_info.check_program`: a whole ET12 program with the
method the runner runs, no operators the runtime lacks; for a given .pte, the files beside it are of
it: run/engine/belonging.py) and read: a KV-cache LLM (`PteInfo.llm`)
is profiled by generation, whatever made it. Each model spec is exported once per export recipe
(`JobOptions.recipes`, `--recipe fp32,int8-static`: `export_configurations`), then each model becomes one
model per point of the job's sweep (`JobOptions.thread_counts`, `prompt_lens`, `gen_lens`: `--threads`,
`--prompt-len`, `--gen-len` lists), named after the recipe and the point where a list has several values
(`tiny_cnn-fp32`, `tiny_cnn-int8-static`; `tiny_llama-p32`, `tiny_llama-p128`; `tiny_cnn-t1`, `tiny_cnn-t2`),
so each is a process-run group of its own with its own statistics, verification and verdicts. A recipe
that cannot export a model leaves that configuration out (`NotExported`), the others go on. The prompt and
generation lengths apply to LLMs only. Without lists, an LLM generates the eager reference's default (a prompt the reference
covers, its `gen_len`), else a 32-token prompt and 32 tokens, kept inside the program's context.
A resumed job expands the same way from its recorded settings.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

from orchestrator.artifacts.generation import DEFAULT_GEN_LEN, DEFAULT_PROMPT_LEN, GenerationArgs, Workload
from orchestrator.artifacts.llm import LlmReference
from orchestrator.artifacts.lowering import ExportedModel, export_model
from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.artifacts.pte_info import LlmShape, check_program
from orchestrator.artifacts.recipes import RecipeSpec, check_recipe_backend, parse_recipes
from orchestrator.base.errors import ExportError, UsageError, one_line
from orchestrator.results.job_config import JobOptions, LeftOut
from orchestrator.run.engine.belonging import check_beside

Point = tuple[ExportedModel, int]  # a model of the job, and the index of the spec it came from


NotExported = LeftOut  # a model's configuration its recipe could not export: left out of the job, the others go on


def export_configurations(specs: Sequence[ModelSpec], backend: str, options: JobOptions,
                          log: Callable[[str], None]) -> tuple[list[ExportedModel], list[int], list[NotExported]]:
    """Each spec exported (cached) once per export recipe of the job (once without recipes), each export's spec
    index, and the configurations whose recipe failed to export (a recipe that cannot quantize a model fails that
    configuration only; when nothing at all exports, the first failure is raised, as without recipes)."""
    recipes = parse_recipes(",".join(options.recipes)) if options.recipes else ()
    check_recipe_backend(backend, recipes)
    _check_configuration_names(specs, recipes)
    models, spec_of, failed, first = [], [], [], None
    for index, spec in enumerate(specs):
        for recipe in recipes or (None,):
            try:
                models.append(export_model(spec, backend, recipe=recipe, log=log))
            except ExportError as exc:
                if recipe is None:
                    raise
                first = first or exc
                name = f"{spec.name}-{recipe.label}" if len(recipes) > 1 else spec.name
                failed.append(NotExported(name, spec.text, recipe.text, one_line(str(exc))))
                log(failed[-1].note + ("; the other configurations go on" if len(specs) * len(recipes) > 1 else ""))
                continue
            spec_of.append(index)
    if first is not None and not models:
        raise first
    return models, spec_of, failed


def _check_configuration_names(specs: Sequence[ModelSpec], recipes: Sequence[RecipeSpec]) -> None:
    """Two configurations named alike (`m` with recipe `int8-static` beside a model named `m-int8-static`), found
    before any export runs (it was found after all of them)."""
    names = [f"{spec.name}-{recipe.label}" if len(recipes) > 1 else spec.name
             for spec in specs for recipe in recipes or (None,)]
    clashes = [name for name, count in Counter(names).items() if count > 1]
    if clashes:
        raise UsageError(f"the sweep names two models {clashes[0]!r}; give the models other names (--name)")


def sweep_models(models: Sequence[ExportedModel], options: JobOptions, *, custom_ops: bool = False,
                 spec_of: Sequence[int] = ()) -> list[Point]:
    """Every model checked and expanded into its sweep points, in order, each with the index of its spec (`spec_of`,
    default: one model per spec); a usage or data error (exit 2) before anything runs when a program cannot run or a
    point does not fit it."""
    points: list[Point] = []
    any_llm = False
    for position, model in enumerate(models):
        index = spec_of[position] if spec_of else position
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
            points.append((replace(model, name=_name(model, workload, options), workload=workload), index))
    if (options.prompt_lens or options.gen_lens) and not any_llm:
        raise UsageError("--prompt-len and --gen-len apply to LLM programs (a KV-cache forward(tokens, input_pos) "
                         "with get_max_seq_len, get_vocab_size, use_kv_cache); no model of this job is one")
    clashes = [name for name, count in Counter(m.name for m, _ in points).items() if count > 1]
    if clashes:
        raise UsageError(f"the sweep names two models {clashes[0]!r}; give the models other names (--name)")
    return points


def _generations(model: ExportedModel, shape: LlmShape, options: JobOptions) -> list[GenerationArgs]:
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


def _name(model: ExportedModel, workload: Workload, options: JobOptions) -> str:
    """The model's name at a point: a suffix per list of several values (the recipe first)."""
    base = model.name
    suffix = f"-{model.recipe.label}" if len(options.recipes) > 1 and model.recipe is not None else ""
    if len(options.thread_counts) > 1:
        suffix += f"-t{workload.threads}"
    if workload.generation is not None and len(options.prompt_lens) > 1:
        suffix += f"-p{workload.generation.prompt_len}"
    if workload.generation is not None and len(options.gen_lens) > 1:
        suffix += f"-g{workload.generation.gen_len}"
    return base + suffix
