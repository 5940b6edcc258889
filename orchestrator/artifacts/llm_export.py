"""Export an `LlmRecipe` with ExecuTorch's own exporter, and record the eager greedy reference.

`python -m executorch.examples.models.llama.export_llama` runs as a subprocess (it sets up logging
and global state of its own), on a params.json and a seeded random checkpoint written to a fresh
temporary folder: the exporter treats a checkpoint whose path contains "int8" or "8da4w" as
pre-quantized, so neither may appear in it. The eager reference is the exporter's own eager model
(its `_prepare_for_llama_export`: the same checkpoint, params and source transforms, so quantized
recipes are referenced by their quantized eager model), run greedily exactly as the runner runs
the program: prefill in chunks of the program's bound on S, then one token per step, up to the
end of the context. Changing what this module writes needs a bump of lowering.EXPORT_FORMAT.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from orchestrator.artifacts.llm import LlmRecipe, LlmReference, ReferenceGeneration, seeded_prompt
from orchestrator.artifacts.pte_info import LlmShape, read_pte_info
from orchestrator.base import cache, procs
from orchestrator.base.codec import encode
from orchestrator.base.errors import ExportError

EXPORTER = "executorch.examples.models.llama.export_llama"
LLM_REFERENCE_NAME = "llm_reference.json"
EXPORT_TIMEOUT_S = 3 * 3600
CHECKPOINT_NAME = "weights.pth"  # never "int8"/"8da4w": export_llama would take it as pre-quantized
_PREQUANTIZED_MARKS = ("int8", "8da4w")


def export_llm_into(recipe: LlmRecipe, backend: str, pte: Path, quiet: Callable[[], None] = lambda: None) -> str | None:
    """Export `recipe` to `pte` (and its ETRecord beside it) and write the eager reference beside it;
    returns why the reference could not be made (None: it was). `quiet` runs once torch is imported
    (its logging setup resets levels on import)."""
    import torch  # noqa: F401

    quiet()
    work = Path(tempfile.mkdtemp(prefix="etfarm-llm-"))
    try:
        if any(mark in str(work) for mark in _PREQUANTIZED_MARKS):  # a TMPDIR named so: use the cwd's
            raise ExportError(f"the temporary folder {work} contains 'int8' or '8da4w', which export_llama "
                              "takes for a pre-quantized checkpoint; set TMPDIR elsewhere")
        params, checkpoint = work / "params.json", work / CHECKPOINT_NAME
        params.write_text(json.dumps(dict(recipe.params)))
        write_checkpoint(recipe, checkpoint)
        args = recipe.export_argv(params, checkpoint, pte, backend)
        result = procs.run([sys.executable, "-m", EXPORTER, *args], cwd=work, timeout_s=EXPORT_TIMEOUT_S)
        if not result.ok or not pte.is_file():
            raise ExportError(f"export_llama failed ({'timed out' if result.timed_out else f'exit {result.exit_code}'}): "
                              f"{_last_error_line(result.stdout + result.stderr)}")
        shape = read_pte_info(pte).llm
        if shape is None:
            raise ExportError(f"export_llama wrote {pte.name}, but it is not a KV-cache LLM program")
        try:
            reference = eager_reference(recipe, args, shape)
        except Exception as exc:  # noqa: BLE001  (the exporter's internals may move: keep the program)
            return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
        cache.write_json_atomic(pte.parent / LLM_REFERENCE_NAME, encode(reference))
        return None
    finally:
        _remove_tree(work)


def write_checkpoint(recipe: LlmRecipe, path: Path) -> None:
    """A seeded random state_dict of the recipe's Transformer (ExecuTorch's own construction)."""
    import torch
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs

    torch.manual_seed(recipe.seed)
    model = construct_transformer(ModelArgs(**dict(recipe.params), max_seq_len=recipe.max_seq_len,
                                            max_context_len=recipe.context_len))
    torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, path)


def eager_reference(recipe: LlmRecipe, export_args: Sequence[str], shape: LlmShape) -> LlmReference:
    """Greedy tokens of the exporter's eager model for each of the recipe's prompts."""
    import torch
    from executorch.examples.models.llama.export_llama_lib import _prepare_for_llama_export, build_args_parser
    from executorch.extension.llm.export.config.llm_config import LlmConfig

    config = LlmConfig.from_args(build_args_parser().parse_args(list(export_args)))
    model = _prepare_for_llama_export(config).model.eval()
    generations = []
    with torch.no_grad():
        for prompt_len in recipe.prompt_lens:
            prompt = seeded_prompt(recipe.prompt_seed, prompt_len, shape.vocab_size)
            tokens = greedy(model, prompt, shape.max_context_len - prompt_len + 1, shape.prefill_chunk)
            generations.append(ReferenceGeneration(prompt_len, tuple(prompt), tuple(tokens)))
    return LlmReference(recipe.prompt_seed, recipe.gen_len, tuple(generations))


def greedy(model: Any, prompt: Sequence[int], gen_len: int, chunk: int) -> list[int]:
    """The runner's loop in eager torch: chunked prefill, then one token per step (argmax)."""
    import torch

    def forward(ids: Sequence[int], pos: int) -> int:
        out = model(torch.tensor([list(ids)], dtype=torch.long), {"input_pos": torch.tensor([pos], dtype=torch.long)})
        logits = out[0] if isinstance(out, tuple) else out
        return int(logits.reshape(-1, logits.shape[-1])[-1].argmax())

    token = 0
    for offset in range(0, len(prompt), chunk):
        token = forward(prompt[offset:offset + chunk], offset)
    tokens = [token]
    for i in range(gen_len - 1):
        tokens.append(forward([tokens[-1]], len(prompt) + i))
    return tokens


def _last_error_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line.split(":")[0] or line.startswith("ERROR")]
    return (errors or lines or ["no output"])[-1][:500]


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
