"""The store keeps an LLM's figures and every run's PSS (process_runs.run_json, no migration); history points
carry TTFT and decode tokens/s; `etfarm history` prints them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from orchestrator.base.cache import write_json_atomic
from orchestrator.report.terminal.history import history_table, run_details
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from tests.helpers.llm_figures import llm_run
from tests.unit.store.rundirs import make_run_dir


def llm_run_dir(tmp_path: Path) -> Path:
    """A synthetic run whose `local` model generated (TTFT 2/4 ms, decode steps 0.5 ms) and records PSS."""
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000")
    job = load_manifest(run)
    device = job.device("local")
    assert device is not None
    model = device.model("mlp")
    assert model is not None
    runs = tuple(replace(r, pss_load_kb=400 + k, pss_kb=600 + k, peak_rss_kb=900,
                         llm=llm_run([2.0, 4.0], [0.5, 0.5]) if r.traced else llm_run([9.0], [9.0]))
                 for k, r in enumerate(model.runs))
    job = job.with_device(device.with_model(replace(model, runs=runs)))
    write_json_atomic(run / "manifest.json", job.to_dict())
    return run


def test_llm_figures_and_pss_round_trip_and_reach_history(tmp_path: Path) -> None:
    run = llm_run_dir(tmp_path)
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run))
        assert store.job("r1").to_dict() == load_manifest(run).to_dict()  # llm and PSS included
        (stored,) = store.jobs()
    points = {p.device: p for p in stored.points}
    local, rpi5 = points["local"], points["rpi5"]
    assert local.ttft_ms == 3.0 and local.decode_tokens_per_s == 2000.0  # traced runs only
    assert local.pss_kb == 602 and rpi5.pss_kb is None and rpi5.ttft_ms is None
    table = history_table([stored])
    assert "LLMs (medians over the generations)" in table and "3.0000 / 2000" in table
    assert "local mlp: LLM, 3-token prompt (1 prefill call), 5 tokens generated" in run_details(load_manifest(run), None)


def test_history_of_runs_without_llms_is_unchanged(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000")
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run))
        (stored,) = store.jobs()
    assert "LLMs" not in history_table([stored]) and all(p.ttft_ms is None for p in stored.points)


def test_a_dashboard_reads_the_same_llm_figures_and_series_keys_without_the_samples(tmp_path: Path) -> None:
    """series_rows (what `publish` reads, set-based) gives each point the figures history gives it, and a keys-only job
    (no samples) the series key of the whole job: an LLM's generation setting included."""
    from orchestrator.verdicts.likeness import SeriesKey

    run = llm_run_dir(tmp_path)
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run))
        (stored,) = store.jobs()
        rows = {r.device: r for r in store.series_rows().points(["r1"])["r1"]}
        whole, keys_only = store.job("r1"), store.job("r1", keys_only=True)
    for point in stored.points:
        row = rows[point.device]
        assert (row.pss_kb, row.ttft_ms, row.decode_tokens_per_s, row.p50_ms) == \
            (point.pss_kb, point.ttft_ms, point.decode_tokens_per_s, point.e2e_p50_ms)
        assert SeriesKey.of(keys_only, point.device, point.model) == SeriesKey.of(whole, point.device, point.model)
    assert dict(SeriesKey.of(keys_only, "local", "mlp").settings)["generation"] != "-"  # the LLM's generation is known
    assert rows["local"].peak_rss_kb == 900 and len(rows["local"].run_medians_ms) == 2 and rows["local"].layers
