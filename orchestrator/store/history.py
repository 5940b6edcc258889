"""Rows of the stored history, as the store hands them to reports, `history` and verdicts."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.run.configuration import Settings


@dataclass(frozen=True)
class HistoryPoint:
    """One (run, device, model) of the store: its end-to-end latency and how the run ended."""

    run_id: str
    started: str  # ISO 8601, as in the manifest
    device: str
    model: str
    status: str  # the device's status in that run ("ok", "failed", ...), or the model's when the device was ok and the model not
    e2e_p50_ms: float | None  # wall clock per execution (traced runs), median over all samples
    e2e_p90_ms: float | None
    git_commit: str | None  # the user's commit of the model file, when it is in a git repository
    backend: str = ""  # the model's backend in that run (xnnpack, portable, ...)
    flagged: int = 0  # traced process runs the calibration flagged interfered or throttled
    pss_kb: int | None = None  # the highest PSS of its process runs (KiB)
    ttft_ms: float | None = None  # an LLM: time to first token, median over the traced runs' generations
    decode_tokens_per_s: float | None = None  # an LLM: decode rate, median over the same
    # the configuration it ran with (run/configuration.py): with device and model, the series it belongs to
    settings: Settings = ()
    verdict: str | None = None  # a nightly's verdict on it (regressed, improved, ...), None when none judged it
    peak_rss_bytes: int | None = None  # memory by owner's peak RSS (results/footprint.py), store v6
    uj_per_inference: float | None = None  # energy per inference above idle (run/energy/), store v6
