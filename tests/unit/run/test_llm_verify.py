"""run/llm_verify.py: every generation's tokens against the eager reference; wrong, skipped, or equal."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.results.model import ProcessRun, VerificationStatus
from orchestrator.run.llm_verify import verify_generations
from tests.helpers.llm_figures import llm_run


def reference(tmp_path: Path, tokens: list[int], prompt: list[int] | None = None) -> Path:
    path = tmp_path / "llm_reference.json"
    path.write_text(json.dumps({"format": "etfarm-llm-reference/1", "prompt_seed": 0, "gen_len": 5, "generations": [
        {"prompt_len": 3, "prompt_tokens": prompt or [1, 2, 3], "tokens": tokens}]}))
    return path


def runs(tokens: tuple[int, ...] = (5, 6, 7, 8, 9)) -> list[ProcessRun]:
    return [ProcessRun("run-1", True, (1.0, 1.0), llm=llm_run([1.0, 1.0], [0.1, 0.1])),
            ProcessRun("e2e-1", False, (1.0, 1.0), llm=llm_run([1.0, 1.0], [0.1, 0.1], tokens=tokens))]


def test_every_generation_of_every_run_is_compared(tmp_path: Path) -> None:
    ok = verify_generations(reference(tmp_path, [5, 6, 7, 8, 9, 10, 11]), runs())
    assert ok.status is VerificationStatus.PASS and ok.runs_checked == 2
    assert ok.detail == "4 generation(s) in 2 run(s) equal the eager model's greedy tokens (20 tokens)"
    wrong = verify_generations(reference(tmp_path, [5, 6, 7, 8, 9]), runs(tokens=(5, 6, 0, 8, 9)))  # untraced too
    assert wrong.status is VerificationStatus.FAIL
    assert wrong.detail == "e2e-1 generation 1: token 3 is 0, the eager model's is 7 (first 2 of 5 equal)"


def test_without_a_reference_for_the_prompt_nothing_is_verified(tmp_path: Path) -> None:
    assert verify_generations(None, runs()).status is VerificationStatus.SKIPPED
    other = verify_generations(reference(tmp_path, [5], prompt=[4, 4, 4]), runs())
    assert other.status is VerificationStatus.SKIPPED and "no generation for this 3-token prompt" in other.detail
    assert verify_generations(None, [ProcessRun("run-1", True, ())]).detail == "the runner reported no generations"
