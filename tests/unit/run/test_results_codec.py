"""base/codec.py + results/model.py: the manifest is written from the dataclass fields, byte for byte as before.

`manifest_golden.json` was written by the hand-kept `to_dict`s this replaced (every field set,
keys in the order they wrote them, as `history show --json` prints them); the reads below are
what their `from_dict`s returned for incomplete and old manifests.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from orchestrator.base.codec import FLAT, KEYED, Layout, decode, encode
from orchestrator.base.errors import DataError
from orchestrator.results.model import (
    Attempt,
    DeviceResult,
    Job,
    JobConfig,
    ModelArtifacts,
    ModelResult,
    ProcessRun,
    Verification,
    load_manifest,
)
from tests.unit.run.golden_results import READ_CASES, rich_job

GOLDEN = Path(__file__).with_name("manifest_golden.json")


def test_every_field_is_written_as_before_in_the_same_order() -> None:
    job = rich_job()
    assert json.dumps(job.to_dict(), indent=2) + "\n" == GOLDEN.read_text()


def test_the_manifest_reads_back_equal(tmp_path: Path) -> None:
    job = rich_job()
    (tmp_path / "manifest.json").write_text(json.dumps(job.to_dict(), indent=2, sort_keys=True))
    assert load_manifest(tmp_path) == job
    assert "summary" in job.to_dict()["devices"]["d"]["models"]["m"]  # derived, written ...
    assert load_manifest(tmp_path).device("d").model("m") == job.device("d").model("m")  # ... and ignored on read


READS = {
    "process_run_minimal": (ProcessRun.from_dict, "ProcessRun(label='run-1', traced=True, execute_ms=(), load_ms=None, program_load_ms=None, device_state=DeviceState(facts=None, cooldown_waited_s=None, gate=None, other={}), artifacts=(), runner={}, cold=False, peak_rss_load_kb=None, peak_rss_kb=None, planned_memory_bytes=None, program_bytes=None, calibration_before_ms=None, calibration_after_ms=None, flag=None, slowdown=None, runner_ms=None, step_ms=None, pss_load_kb=None, pss_kb=None, llm=None, memory=None, contention=None, warmup_ms=None)"),  # noqa: E501
    "process_run_nulls": (ProcessRun.from_dict, "ProcessRun(label='run-1', traced=True, execute_ms=(1.0, 2.5), load_ms=None, program_load_ms=None, device_state=DeviceState(facts=None, cooldown_waited_s=None, gate=None, other={}), artifacts=(), runner={}, cold=False, peak_rss_load_kb=None, peak_rss_kb=12, planned_memory_bytes=None, program_bytes=None, calibration_before_ms=None, calibration_after_ms=None, flag=None, slowdown=None, runner_ms=None, step_ms=3.0, pss_load_kb=None, pss_kb=None, llm=None, memory=None, contention=None, warmup_ms=None)"),  # noqa: E501
    "device_minimal": (lambda d: DeviceResult.from_dict("x", d), "DeviceResult(name='x', transport='', target='', status=<DeviceStatus.OK: 'ok'>, error=None, blame=None, facts=DeviceFacts(os=None, kernel=None, abi=None, cpus=(), cores=None, loadavg=None, mem_total_kb=None, mem_available_kb=None, thermal=(), batteries=(), clusters=(), android=None, runner=None, other=()), models=(), runner_key=None, controls={}, attempts=(), emulated=False)"),  # noqa: E501
    "model_minimal": (lambda d: ModelResult.from_dict("x", d), "ModelResult(name='x', status=<ModelStatus.FAILED: 'failed'>, runs=(), verification=None, error=None, blame=None, accuracy=None, memory=None, energy=None)"),  # noqa: E501
    "verification_minimal": (Verification.from_dict, "Verification(status=<VerificationStatus.SKIPPED: 'skipped'>, detail='', max_abs_diff=None, runs_checked=0)"),  # noqa: E501
    "attempt_empty": (Attempt.from_dict, "Attempt(step='', error='', at='', retried=None)"),
    "config_empty": (JobConfig.from_dict, "JobConfig(devices=(), models=(), backend='', options=JobOptions(runs=5, iterations=20, warmup=3, run_timeout_s=600.0, wait_for_lock=True, lock_timeout_s=None, intermediate_outputs=False, debug_buffer_size=16777216, numerics=False, cpu_threads=0, untraced_runs=1, cooldown_s=0.0, max_temp_c=None, order=<RunOrder.INTERLEAVED: 'interleaved'>, seed=0, thread_counts=(), prompt_lens=(), gen_lens=(), recipes=(), energy=False, energy_s=10.0, energy_phases=3), config_file=None, scheduler=None, names=())"),  # noqa: E501
    "config_flat": (JobConfig.from_dict, "JobConfig(devices=('a',), models=('m.py',), backend='xnnpack', options=JobOptions(runs=2, iterations=20, warmup=3, run_timeout_s=600.0, wait_for_lock=True, lock_timeout_s=None, intermediate_outputs=False, debug_buffer_size=16777216, numerics=False, cpu_threads=0, untraced_runs=1, cooldown_s=0.0, max_temp_c=None, order=<RunOrder.ABBA: 'abba'>, seed=0, thread_counts=(), prompt_lens=(), gen_lens=(), recipes=(), energy=False, energy_s=10.0, energy_phases=3), config_file=None, scheduler=None, names=())"),  # noqa: E501
    "artifacts_extra": (ModelArtifacts.from_dict, "ModelArtifacts(name='m', spec='m.py', backend='xnnpack', key='k', pte='m.pte', etrecord=None, inputs=None, reference_outputs=None, content_hash=None, git_commit=None, numerics_reference=None, recipe=None, eager_outputs=None, eager_reference=None)"),  # noqa: E501
}


@pytest.mark.parametrize("case", sorted(READS))
def test_incomplete_and_old_manifests_read_as_before(case: str) -> None:
    read, expected = READS[case]
    assert repr(read(READ_CASES[case])) == expected


@pytest.mark.parametrize("bad", [{"run_id": "r"}, {"run_id": "r", "status": "ok"},
                                 {"run_id": "r", "status": "bogus", "started": "t"},
                                 {"run_id": "r", "status": "ok", "started": "t", "config": {"runs": "abc"}},
                                 {"run_id": "r", "status": "ok", "started": "t", "devices": {"d": {"status": "?"}}},
                                 {"run_id": "r", "status": "ok", "started": "t", "devices": {"d": []}}])
def test_a_malformed_manifest_is_one_data_error(bad: dict[str, Any]) -> None:
    with pytest.raises(DataError, match="malformed manifest"):
        Job.from_dict({"schema_version": 1, **bad})


def test_a_cut_manifest_is_refused_as_cut_naming_the_file(tmp_path: Path) -> None:
    """Issue 31: files are read whole or refused; a manifest cut anywhere inside its JSON says so in one line."""
    text = json.dumps(rich_job().to_dict(), indent=2) + "\n"
    for cut in (1, len(text) // 3, len(text) - 3):
        (tmp_path / "manifest.json").write_text(text[:cut])
        with pytest.raises(DataError) as refused:
            load_manifest(tmp_path)
        assert str(refused.value) == f"{tmp_path / 'manifest.json'}: not a whole manifest: it ends inside its JSON (cut short?)"
    (tmp_path / "manifest.json").write_text(text[:-1])  # the newline after the JSON is not part of it
    assert load_manifest(tmp_path) == rich_job()


def test_non_finite_optional_numbers_are_none_both_ways() -> None:
    run = ProcessRun("run-1", True, (1.0,), load_ms=math.nan, slowdown=math.inf)
    written = run.to_dict()
    assert written["load_ms"] is None and written["slowdown"] is None
    json.dumps(written, allow_nan=False)  # nothing non-finite reaches a manifest
    assert ProcessRun.from_dict({**written, "step_ms": float("-inf")}).step_ms is None


@dataclass(frozen=True)
class _Inner:
    LAYOUT: ClassVar[Layout] = Layout(key="name")

    name: str
    size: int = 0


@dataclass(frozen=True)
class _Options:
    depth: int = 1


@dataclass(frozen=True)
class _Outer:
    LAYOUT: ClassVar[Layout] = Layout(first=("b",), last=("a",), derived=("total",))

    a: str
    b: float | None = None
    items: tuple[_Inner, ...] = field(default=(), metadata=KEYED)
    options: _Options = field(default_factory=_Options, metadata=FLAT)
    new_field: int = 5  # declared once: written and read without any other change

    def total(self) -> int:
        return sum(i.size for i in self.items)


def test_a_new_field_is_declared_once() -> None:
    outer = _Outer("x", 1.5, (_Inner("i", 3), _Inner("j", 4)), _Options(2), new_field=9)
    written = encode(outer)
    assert list(written) == ["b", "items", "new_field", "a", "depth", "total"]
    assert written["items"] == {"i": {"size": 3}, "j": {"size": 4}} and written["total"] == 7
    assert decode(_Outer, written) == outer
    assert decode(_Outer, {"a": "x"}) == _Outer("x")
