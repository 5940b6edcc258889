"""A tiny Llama 3 with seeded random weights: what etfarm's LLM profiling looks like, in seconds.

`build` returns an LlmRecipe, not (module, inputs): etfarm exports it with ExecuTorch's own
exporter (`export_llama --model llama3 -kv -X -d fp32`, KV cache, dynamic-shape prefill) from a
checkpoint of random weights seeded here, caches the .pte like every export, and records the eager
model's greedy tokens for the default prompt so a device's generated tokens are verified.
The runner then prefills a seeded prompt of token ids and decodes greedily (no tokenizer needed).

`build_deep` is the same model with twice the layers: a known slowdown for `run --ab`. `build_wide` is
twice as wide (dim 128) with the same two layers: a slowdown whose export takes no longer than `build`'s
(an export's time grows with the layers, not their width), the one the test suite uses.
"""

from orchestrator.artifacts.llm import LlmRecipe

PARAMS = {
    "dim": 64,
    "n_layers": 2,
    "n_heads": 4,
    "n_kv_heads": 2,
    "vocab_size": 512,
    "multiple_of": 32,
    "norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "use_scaled_rope": False,
}


def build() -> LlmRecipe:
    return LlmRecipe(params=PARAMS, seed=0, max_seq_len=128, prompt_lens=(8, 32), gen_len=32)


def build_deep() -> LlmRecipe:
    return LlmRecipe(params={**PARAMS, "n_layers": 4}, seed=0, max_seq_len=128, prompt_lens=(8, 32), gen_len=32)


def build_wide() -> LlmRecipe:
    return LlmRecipe(params={**PARAMS, "dim": 128}, seed=0, max_seq_len=128, prompt_lens=(8, 32), gen_len=32)
