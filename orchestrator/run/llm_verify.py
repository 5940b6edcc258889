"""An LLM's verification: every generation's greedy tokens against the eager model's (docs/architecture.md, "LLMs").

The eager reference (`llm_reference.json`, written when etfarm exported the model: artifacts/llm.py)
holds the eager model's greedy tokens for the recipe's seeded prompts. Every measured generation of
every process run, traced or not, is compared token by token (`llm.check_tokens`); one differing
token fails the model (`wrong-results`, as wrong outputs do), naming the run, the generation and
the position. Without a reference (a .pte exported elsewhere), or for a prompt the reference does
not cover, the tokens are not verified: `skipped`, saying why.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrator.artifacts.llm import LlmReference, check_tokens
from orchestrator.results.model import ProcessRun, Verification, VerificationStatus


def verify_generations(reference_path: Path | None, runs: Sequence[ProcessRun]) -> Verification:
    """The model's generated tokens over every run against the eager reference."""
    generated = [r for r in runs if r.llm is not None and r.llm.generations]
    if not generated:
        return Verification(VerificationStatus.SKIPPED, "the runner reported no generations")
    if reference_path is None or not reference_path.is_file():
        return Verification(VerificationStatus.SKIPPED, "no eager reference for this program (etfarm did not export "
                                                        "it): generated tokens not verified")
    reference = LlmReference.load(reference_path)
    count = tokens = 0
    for run in generated:
        assert run.llm is not None
        for k, generation in enumerate(run.llm.generations):
            check = check_tokens(reference, run.llm.prompt_tokens, generation.tokens)
            if check is None:
                covered = ", ".join(str(g.prompt_len) for g in reference.generations)
                return Verification(VerificationStatus.SKIPPED,
                                    f"the eager reference has no generation for this {run.llm.prompt_len}-token prompt "
                                    f"(seed {run.llm.prompt_seed}; it covers prompts of {covered}): tokens not verified")
            if not check.ok:
                at = check.first_mismatch if check.first_mismatch is not None else 0
                got = check.got[at] if at < len(check.got) else None
                want = check.expected[at] if at < len(check.expected) else None
                return Verification(VerificationStatus.FAIL,
                                    f"{run.label} generation {k + 1}: token {at + 1} is {got}, the eager model's is "
                                    f"{want} (first {at} of {check.compared} equal)", None, len(generated))
            count, tokens = count + 1, tokens + check.compared
    return Verification(VerificationStatus.PASS, f"{count} generation(s) in {len(generated)} run(s) equal the eager "
                                                 f"model's greedy tokens ({tokens} tokens)", 0.0, len(generated))
