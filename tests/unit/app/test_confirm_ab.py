"""Which program a night's interleaved confirmation runs as the baseline (app/confirm_ab.py), on real files:
the recorded .pte while it still holds the program of the recorded export key, else an export cache entry of that
key, else nothing and why; and which regressed pairs go interleaved (one job per model and program) or alone.
The interleaved job itself: tests/integration/verdicts/test_nightly.py."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from orchestrator.app.confirm_ab import baseline_program, interleaved_groups, without_baseline
from orchestrator.artifacts.export_entry import META_NAME, PTE_NAME
from orchestrator.results.model import (
    DeviceResult,
    Job,
    JobConfig,
    JobOptions,
    JobStatus,
    ModelArtifacts,
    ModelResult,
    ModelStatus,
)
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.compare import PairVerdict
from orchestrator.verdicts.confirmation import suspected
from orchestrator.verdicts.statistics import Verdict
from orchestrator.verdicts.trust import Load

KEY = "ab" * 32


def entry(exports: Path, name: str, key: str, program: bytes = b"program") -> Path:
    """An export cache entry as lowering.py writes it: `<name>-<key16>/` with model.pte and meta.json."""
    folder = exports / f"{name}-{key[:16]}"
    folder.mkdir(parents=True)
    (folder / PTE_NAME).write_bytes(program)
    (folder / META_NAME).write_text(json.dumps({"key": key}))
    return folder / PTE_NAME


def baseline_job(pte: Path, key: str = KEY, name: str = "mlp") -> Job:
    artifacts = ModelArtifacts(name=name, spec=f"/models/{name}.py:build", backend="xnnpack", key=key, pte=str(pte),
                               content_hash="cd" * 32)
    return Job("base-run", JobStatus.OK, "2026-11-27T00:00:00", JobConfig(("pinned",), (artifacts.spec,)),
               models=(artifacts,))


def test_the_recorded_program_while_its_entry_still_holds_the_key(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    recorded = entry(exports, "mlp", KEY)
    found = baseline_program(baseline_job(recorded), "mlp", exports)
    assert found.pte == recorded and found.run_id == "base-run" and "from " in found.note


def test_another_entry_of_the_same_key_when_the_recorded_one_is_gone_or_rewritten(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    recorded = entry(exports, "mlp", KEY)
    (recorded.parent / META_NAME).write_text(json.dumps({"key": "ef" * 32}))  # rewritten for another program
    entry(exports, "decoy", KEY[:16] + "00" * 24)  # same 16-character prefix, another key: not it
    renamed = entry(exports, "mlp-a", KEY)  # the same program exported under another name (an A/B job's)
    assert baseline_program(baseline_job(recorded), "mlp", exports).pte == renamed
    (recorded.parent / PTE_NAME).unlink()
    assert baseline_program(baseline_job(recorded), "mlp", exports).pte == renamed


def test_a_pte_given_as_the_model_is_found_by_its_content_hash(tmp_path: Path) -> None:
    given = tmp_path / "model.pte"  # no meta.json beside it: the user's own file, keyed by its sha256
    given.write_bytes(b"the user's program")
    key = hashlib.sha256(given.read_bytes()).hexdigest()
    exports = tmp_path / "exports"
    assert baseline_program(baseline_job(given, key), "mlp", exports).pte == given
    given.write_bytes(b"overwritten since")  # the file now holds another program, and nothing else has it
    missing = baseline_program(baseline_job(given, key), "mlp", exports)
    assert missing.pte is None
    assert f"neither {given} nor the export cache ({exports}) holds the program of key {key[:16]}" in missing.note
    assert "run base-run" in missing.note


def test_a_model_the_baseline_run_does_not_record(tmp_path: Path) -> None:
    missing = baseline_program(baseline_job(tmp_path / "x.pte"), "other", tmp_path)
    assert missing.pte is None and missing.missing == "run base-run records no model other"


def regressed(device: str, model: str) -> PairVerdict:
    return PairVerdict(device, model, model, Verdict.REGRESSED)


def test_pairs_go_interleaved_by_model_and_program_or_alone_with_why(tmp_path: Path) -> None:
    exports = tmp_path / "exports"
    mlp = entry(exports, "mlp", KEY)
    cnn_key = "cd" * 32
    jobs = {"mlp": baseline_job(mlp), "cnn": baseline_job(tmp_path / "gone.pte", cnn_key, "cnn")}

    def finder(device: str, model: str) -> RunRecord | None:
        return None if device == "new-phone" else RunRecord(tmp_path / "runs" / "base-run", jobs[model])

    pairs = [regressed("pinned", "mlp"), regressed("pixel", "mlp"), regressed("pinned", "cnn"),
             regressed("new-phone", "mlp")]
    groups, alone, why = interleaved_groups(finder, pairs, JobOptions(), exports)
    assert groups == {("mlp", mlp, "base-run"): ["pinned", "pixel"]}  # one job holds both devices of one program
    assert [(p.device, p.model_b) for p in alone] == [("pinned", "cnn"), ("new-phone", "mlp")]
    assert why[0].startswith("pinned cnn: the baseline's program (cnn, run base-run) cannot be found: neither ")
    assert why[0].endswith(": confirmed by a fresh job alone")
    assert why[1] == "new-phone mlp: no baseline run: confirmed by a fresh job alone"

    groups, alone, why = interleaved_groups(finder, pairs[:1], JobOptions(recipes=("fp32",)), exports)
    assert groups == {} and alone == pairs[:1] and "export recipes" in why[0]


def test_the_store_keeps_the_confirmation_without_the_baseline_program(tmp_path: Path) -> None:
    new = ModelArtifacts(name="mlp", spec="/models/mlp.py:build", backend="xnnpack", key="ef" * 32, pte="/x/model.pte")
    job = baseline_job(tmp_path / "a.pte", name="mlp-baseline")
    job = replace(job, models=(*job.models, new),
                  devices=(DeviceResult("pinned", models=(ModelResult("mlp-baseline", ModelStatus.OK), ModelResult("mlp", ModelStatus.OK))),))
    stats = (SimpleNamespace(device="pinned", model="mlp-baseline"), SimpleNamespace(device="pinned", model="mlp"))
    kept, kept_stats = without_baseline(job, stats, "mlp-baseline")
    assert [m.name for m in kept.models] == ["mlp"] and [r.name for r in kept.devices[0].models] == ["mlp"]
    assert [s.model for s in kept_stats] == ["mlp"] and len(job.models) == 2  # the job itself is untouched


def test_regressed_pairs_and_pairs_their_job_could_not_judge_are_confirmed() -> None:
    busy = (Load(2, 60), Load(13, 60))  # 3 % against 22 %: a different load (trust.py)
    assert suspected(regressed("pinned", "mlp"))
    assert suspected(replace(regressed("pinned", "mlp"), verdict=Verdict.INCONCLUSIVE, loads=busy))
    assert suspected(replace(regressed("pinned", "mlp"), verdict=Verdict.INCONCLUSIVE))  # too noisy, or near the threshold
    assert not suspected(replace(regressed("pinned", "mlp"), verdict=Verdict.UNCHANGED))
    assert not suspected(replace(regressed("pinned", "mlp"), verdict=Verdict.IMPROVED, loads=busy))
