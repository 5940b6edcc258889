"""Synthetic generation-mode figures (the runner's `llm` object, typed) for unit tests."""

from __future__ import annotations

from orchestrator.artifacts.generation import GenerationFigures, LlmRunFigures


def llm_run(ttft: list[float], step_ms: list[float], *, steps: int = 4, tokens: tuple[int, ...] = (5, 6, 7, 8, 9),
            prompt: tuple[int, ...] = (1, 2, 3), seed: int | None = 0) -> LlmRunFigures:
    """One process run: a generation per `ttft` value, each decode step taking its `step_ms` value."""
    gens = tuple(GenerationFigures(
        ttft_ms=t, prefill_ms=t * 0.99, prefill_tokens_per_s=len(prompt) / (t * 0.99) * 1000, decode_ms=s * steps,
        decode_tokens_per_s=1000 / s, decode_step_ms=(s,) * steps, total_ms=t + s * steps, rss_prefill_kb=900,
        pss_prefill_kb=600, rss_decode_kb=950, pss_decode_kb=650, tokens=tokens) for t, s in zip(ttft, step_ms, strict=True))
    return LlmRunFigures(max_seq_len=64, max_context_len=64, vocab_size=16, dynamic_shape=True, prefill_chunk=63,
                         prefill_calls=1, prompt_len=len(prompt), prompt_seed=seed, prompt_tokens=prompt,
                         gen_len=steps + 1, requested_gen_len=steps + 1, decode_steps=steps, generations=gens)
