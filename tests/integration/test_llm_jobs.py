"""LLMs through `etfarm run` against real peers: a .pte of its own dims exported by ExecuTorch's export_llama,
the shipped tiny Llama on local, an SSH board, the emulated Raspberry Pi 5 (qemu) and an adb device,
programs refused before anything is pushed, sweeps, the store and history, compare.

Exports happen once per session in the suite's shared cache (ETFARM_TEST_CACHE_DIR keeps them between
runs); `run --ab` verdicts on real runs are in tests/integration/verdicts/test_llm_verdicts.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from device_agents import DeviceSpec
from orchestrator.artifacts.generation import LlmRunFigures, phase_of_call
from orchestrator.artifacts.llm import LlmRecipe
from orchestrator.artifacts.lowering import ExportedModel, export_model
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base import procs
from orchestrator.profiles.analysis_core import IDENTITY_COLUMNS
from orchestrator.profiles.etdump import KIND_PROFILE, read_etdump
from orchestrator.profiles.stat_rows import PHASE_COLUMNS, read_stats_csv
from orchestrator.results.contention import wait_bound_ms
from orchestrator.run import load_manifest
from tests.helpers.inventory import write_inventory

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TINY_LLAMA = f"{REPO / 'configs' / 'models' / 'tiny_llama.py'}:build"
# Dims of its own: not the shipped example's (dim 64, 2 layers, vocab 512, 128 positions).
OWN_PARAMS = {"dim": 48, "n_layers": 1, "n_heads": 3, "n_kv_heads": 1, "vocab_size": 300, "multiple_of": 16,
              "norm_eps": 1e-5, "rope_theta": 10000.0, "use_scaled_rope": False}
OWN_CONTEXT = 48
SMALL = ("--runs", "2", "--iterations", "2", "--warmup", "1")


def etfarm(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture(scope="session")
def tiny_llama(etfarm_cache: Path) -> ExportedModel:
    return export_model(parse_model_spec(TINY_LLAMA))


@pytest.fixture(scope="session")
def own_dims_pte(etfarm_cache: Path) -> Path:
    """A KV-cache Llama exported by `export_llama -kv -X` itself, from a seeded random checkpoint, alone in
    its folder (no eager reference beside it: etfarm did not export it)."""
    from orchestrator.artifacts.llm_export import EXPORTER, write_checkpoint

    folder = etfarm_cache / "tests" / "own-dims-llama"
    pte = folder / "own_dims.pte"
    if pte.is_file():
        return pte
    work = folder / "work"
    work.mkdir(parents=True, exist_ok=True)
    recipe = LlmRecipe(params=OWN_PARAMS, seed=3, max_seq_len=OWN_CONTEXT)
    (work / "params.json").write_text(json.dumps(OWN_PARAMS))
    write_checkpoint(recipe, work / "weights.pth")
    argv = [sys.executable, "-m", EXPORTER, "--model", "llama3", "--params", str(work / "params.json"), "--checkpoint",
            str(work / "weights.pth"), "-kv", "-X", "-d", "fp32", "--max_seq_length", str(OWN_CONTEXT),
            "--max_context_length", str(OWN_CONTEXT), "-n", str(work / "own_dims.pte")]
    result = procs.run(argv, cwd=work, timeout_s=1800)
    assert result.ok, result.tail(3000)
    (work / "own_dims.pte").rename(pte)
    return pte


def _execute_ms_per_call(etdump: Path) -> list[float]:
    """Method::execute of every forward-call block, in file order (our reader)."""
    dump = read_etdump(etdump)
    ev, out = dump.events, []
    for block in range(dump.num_blocks):
        rows = [i for i in range(dump.block_slice(block).start, dump.block_slice(block).stop)
                if ev.kind[i] == KIND_PROFILE and dump.string(int(ev.name[i])) == "Method::execute"]
        out += [(int(ev.end_time[r]) - int(ev.start_time[r])) / 1e6 for r in rows]
    return out


def _check_generations(llm: LlmRunFigures) -> None:
    for g in llm.generations:
        assert g.decode_tokens_per_s == pytest.approx(llm.decode_steps / g.decode_ms * 1000, rel=1e-5)
        assert g.prefill_tokens_per_s == pytest.approx(llm.prompt_len / g.prefill_ms * 1000, rel=1e-5)
        assert g.decode_ms == pytest.approx(sum(g.decode_step_ms), abs=1e-5 * (llm.decode_steps + 1))
        assert len(g.tokens) == llm.gen_len


def test_a_pte_of_its_own_dims_is_profiled_as_an_llm(own_dims_pte: Path, tmp_path: Path) -> None:
    out = tmp_path / "own"
    result = etfarm("run", "--model", str(own_dims_pte), *SMALL, "--out", str(out), "--no-store")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    line = next(x for x in result.stdout.splitlines() if x.startswith("local own_dims: LLM"))
    assert "time to first token p50" in line and "decode" in line and "tokens/s" in line, line
    assert "24-token prompt" in line and "25 tokens generated" in line  # defaults kept inside its 48 positions
    assert "skipped" in result.stdout  # no eager reference beside a .pte exported elsewhere

    model = load_manifest(out).device("local").model("own_dims")  # type: ignore[union-attr]
    assert model is not None
    runs = list(model.runs)
    assert [r.label for r in runs if r.traced] == ["run-1", "run-2"] and len(runs) == 3
    dump_dir = out / "local" / "own_dims"
    for run in runs:  # prefill and decode figures per process run, traced or not
        llm = run.llm
        assert llm is not None and (llm.vocab_size, llm.max_seq_len, llm.prompt_len) == (300, OWN_CONTEXT, 24)
        assert len(llm.generations) == 2 and llm.prefill_calls == 1 and llm.decode_steps == 24
        _check_generations(llm)
        assert run.pss_kb is not None and 0 < run.pss_kb <= (run.peak_rss_kb or 0)
        if not run.traced:
            continue
        calls = _execute_ms_per_call(dump_dir / run.label / "etdump.etdp")
        per = llm.calls_per_generation
        assert len(calls) == per * len(llm.generations)
        gaps = []
        for k, g in enumerate(llm.generations):  # the ETDump's prefill block lies inside the prefill time
            prefill = [calls[k * per + c] for c in range(per) if phase_of_call(c, llm.prefill_calls, llm.decode_steps)
                       == "prefill"]
            assert sum(prefill) <= g.prefill_ms
            gaps.append(g.prefill_ms - sum(prefill))
        # ...and is almost all of it, in a generation that waited for no CPU (run.clean, results/contention.py): in
        # one that did, the gap between the runner's prefill clock and the ETDump block can hold a preemption (ms)
        clean_gaps = [gap for gap, ok in zip(gaps, run.clean, strict=True) if ok]
        if clean_gaps:
            assert sorted(clean_gaps)[len(clean_gaps) // 2] < 0.5, (gaps, run.clean, run.contention)
        else:
            # no generation of this run was clean: the gap bound says nothing, so the run must show why, each
            # generation's measured wait above its bound, and the model's contention summary counts them
            assert run.contention is not None and len(run.contention.wait_ms) == len(llm.generations)
            assert all(w > wait_bound_ms(ms) for w, ms in zip(run.contention.wait_ms, run.execute_ms, strict=True))
            assert model.contention_summary.contended >= len(llm.generations), model.contention_summary

    rows = {(r.event_block, r.event_index): r for r in read_stats_csv(out / "stats.csv")}
    execute = next(r for r in rows.values() if r.event_name == "Method::execute" and r.phased)
    traced = [r for r in runs if r.traced]
    prefill_times = [t for r in traced for k, t in enumerate(_execute_ms_per_call(dump_dir / r.label / "etdump.etdp"))
                     if phase_of_call(k, 1, 24) == "prefill"]
    assert execute.prefill_samples == len(prefill_times) == 4
    assert execute.decode_samples == 2 * 2 * 24
    assert execute.prefill_avg_ms == pytest.approx(sum(prefill_times) / len(prefill_times), rel=1e-9)
    header = (out / "stats.csv").read_text().splitlines()[0].split(",")
    # new columns come after every column that was there before: the phases, the op identity, the contended samples
    assert header[-len(PHASE_COLUMNS) - len(IDENTITY_COLUMNS) - 1:] == [*PHASE_COLUMNS, *IDENTITY_COLUMNS,
                                                                        "contended_samples"]
    assert "ops by phase" in result.stdout and "prefill:" in result.stdout and "decode:" in result.stdout


def test_tiny_llama_on_local_ssh_rpi5_and_adb(tiny_llama: ExportedModel, ssh_device: DeviceSpec,
                                              rpi5_device: DeviceSpec, adb_device: DeviceSpec, tmp_path: Path) -> None:
    """configs/models/tiny_llama.py:build as a fresh checkout has it (exported by etfarm), on every kind of device
    in one job; the greedy tokens of every generation equal the eager model's on each."""
    local = DeviceSpec("local", "host", str(tmp_path / "local-work"))
    config = write_inventory(tmp_path / "devices.yaml", [local, ssh_device, rpi5_device, adb_device])
    out = tmp_path / "fleet"
    devices = ("local", "sshdev", "rpi5", "adbdev")
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices",
                             ",".join(devices), "--model", TINY_LLAMA, *SMALL, "--out", str(out), "--no-store"],
                            capture_output=True, text=True, timeout=1800, check=False, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-4000:]
    job = load_manifest(out)
    for name in devices:
        model = job.device(name).model("tiny_llama")  # type: ignore[union-attr]
        assert model is not None and model.verification is not None
        assert model.verification.status == "pass", (name, model.verification)
        assert "equal the eager model's greedy tokens" in model.verification.detail
        assert f"{name} tiny_llama: LLM, 32-token prompt (1 prefill call), 32 tokens generated" in result.stdout
        for run in model.runs:
            assert run.llm is not None and len(run.llm.generations) == 2
            _check_generations(run.llm)
            assert run.pss_kb is not None and run.pss_load_kb is not None, (name, run)  # every testbed device has /proc
            # PSS <= RSS <= peak RSS at every instant. PSS at load and at the end are not ordered: pages shared
            # with the suite's other qemu and runner processes are split among however many map them then.
            assert 0 < run.pss_load_kb <= (run.peak_rss_kb or 0) and 0 < run.pss_kb <= (run.peak_rss_kb or 0), (name, run)
    assert "qemu-aarch64" in (out / "rpi5" / "tiny_llama" / "run-1" / "runner.log").read_text().splitlines()[0]
    stats = pd.read_csv(out / "stats.csv")
    assert set(stats["device"]) == set(devices)
    phased = stats[stats["event_name"] == "Method::execute"].dropna(subset=["prefill_samples"])
    assert sorted(phased["device"]) == sorted(devices)
    assert (phased["prefill_samples"] == 4).all() and (phased["decode_samples"] == 4 * 31).all()
    html = (out / "report.html").read_text()
    assert "LLMs: time to first token, tokens per second, memory" in html
    assert all(f"<td>{name}</td>" in html for name in devices) and "per-step decode latency" in html


def test_llama_custom_ops_are_refused_in_one_line_before_anything_runs(llama_ops_pte: Path, tmp_path: Path) -> None:
    out = tmp_path / "never"
    result = etfarm("run", "--model", str(llama_ops_pte), "--out", str(out), "--no-store")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()  # nothing else: no runner built, nothing staged
    assert line.startswith("error: sdpa_kv.pte: method 'forward' needs operators") and "llama::update_cache.out" in line
    assert "export without that flag" in line and "own runtime" in line
    assert not out.exists()


def test_a_damaged_pte_is_a_data_error_before_any_device_is_contacted(tiny_llama: ExportedModel, ssh_device: DeviceSpec,
                                                                      tmp_path: Path) -> None:
    config = write_inventory(tmp_path / "devices.yaml", [ssh_device])
    noise = tmp_path / "noise.pte"
    noise.write_bytes(os.urandom(4096))
    whole = tiny_llama.pte.read_bytes()
    cut = tmp_path / "cut.pte"
    cut.write_bytes(whole[: len(whole) * 3 // 4])
    for pte, why in ((noise, "is not an ExecuTorch program"), (cut, "is truncated: its segments end at byte")):
        result = etfarm("run", "--config", str(config), "-d", ssh_device.name, "--model", str(pte), "--out",
                        str(tmp_path / pte.stem), "--no-store")
        assert result.returncode == 2, result.stdout + result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("error: ") and why in line and str(pte) in line, line
        assert not (tmp_path / pte.stem).exists()
        assert not Path(ssh_device.workdir).exists(), "the device was contacted"  # created on connecting


def test_a_sweep_is_one_model_per_point_recorded_and_compared(tiny_llama: ExportedModel, tmp_path: Path) -> None:
    store = tmp_path / "results.db"
    outs = []
    for k in range(2):
        out = tmp_path / f"sweep{k}"
        result = etfarm("run", "--model", TINY_LLAMA, "--prompt-len", "8,32", "--gen-len", "16", "--threads", "1",
                        "--runs", "2", "--iterations", "2", "--untraced-runs", "0", "--out", str(out), "--store",
                        str(store))
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        outs.append(out)
    job = load_manifest(outs[0])
    assert sorted(m.name for m in job.models) == ["tiny_llama-p32", "tiny_llama-p8"]
    options = job.config.options
    assert options.prompt_lens == (8, 32) and options.gen_lens == (16,) and job.config.names == ("tiny_llama",)
    for name, prompt in (("tiny_llama-p8", 8), ("tiny_llama-p32", 32)):
        model = job.device("local").model(name)  # type: ignore[union-attr]
        assert model is not None and model.verification is not None and model.verification.status == "pass"
        assert all(r.llm is not None and (r.llm.prompt_len, r.llm.gen_len) == (prompt, 16) for r in model.runs)
        assert all(r.runner.get("cpu_threads") == 1 for r in model.runs)
    history = etfarm("history", "--store", str(store))
    assert history.returncode == 0, history.stderr
    assert "TTFT ms / decode tokens/s" in history.stdout and "tiny_llama-p32" in history.stdout
    show = etfarm("history", "show", job.run_id, "--store", str(store))
    assert "local tiny_llama-p8: LLM, 8-token prompt" in show.stdout
    compare = etfarm("compare", str(outs[0]), str(outs[1]), "--json")
    assert compare.returncode in (0, 1, 3), compare.stderr  # 3: a pair it could not judge (too noisy, another load)
    pairs = json.loads(compare.stdout)["pairs"]
    assert sorted(p["model_b"] for p in pairs) == ["tiny_llama-p32", "tiny_llama-p8"]
    for pair in pairs:
        metrics = {m["metric"]: m for m in pair["metrics"]}
        assert set(metrics) == {"ttft", "decode_tokens_per_s"}
        assert metrics["decode_tokens_per_s"]["higher_is_better"] and metrics["decode_tokens_per_s"]["unit"] == "tokens/s"
        assert not metrics["ttft"]["higher_is_better"]
    # A resumed sweep expands again from what the manifest recorded: here there is nothing left to run.
    resumed = etfarm("run", "--resume", str(outs[0]), "--no-store")
    assert resumed.returncode == 0 and "nothing to resume" in resumed.stderr, resumed.stderr[-2000:]


def test_an_llm_sweep_on_the_farm(tiny_llama: ExportedModel, ssh_device: DeviceSpec, tmp_path: Path) -> None:
    """A Dask task carries the model's sweep point (what to generate, threads) and its eager reference: the
    worker's runs generate and are verified as on this host."""
    from tests.integration.test_farm import Farm

    (tmp_path / "farm-root").mkdir()
    farm = Farm(tmp_path / "farm-root")
    try:
        farm.worker("wa", write_inventory(tmp_path / "a.yaml", [ssh_device]))
        farm.wait_online(ssh_device.name)
        out = tmp_path / "dist"
        result = etfarm("run", "--scheduler", farm.address, "--devices", ssh_device.name, "--model", TINY_LLAMA,
                        "--threads", "1,2", "--gen-len", "12", "--runs", "1", "--iterations", "2", "--untraced-runs",
                        "0", "--out", str(out), "--no-store", "--no-report")
        assert result.returncode == 0, result.stderr[-4000:] + farm.logs()
    finally:
        farm.stop()
    device = load_manifest(out).device(ssh_device.name)
    assert device is not None and sorted(m.name for m in device.models) == ["tiny_llama-t1", "tiny_llama-t2"]
    for model, threads in ((device.model("tiny_llama-t1"), 1), (device.model("tiny_llama-t2"), 2)):
        assert model is not None and model.verification is not None and model.verification.status == "pass"
        (run,) = model.runs
        assert run.llm is not None and (run.llm.prompt_len, run.llm.gen_len) == (32, 12)
        assert run.runner["cpu_threads"] == threads
    stats = pd.read_csv(out / "stats.csv")
    assert stats.dropna(subset=["prefill_samples"])["model"].nunique() == 2  # phases split on the worker
