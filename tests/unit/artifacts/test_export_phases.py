"""The phases of a recipe export: ExecuTorch's stage times by phase, calibration apart, etfarm's own share, and a
failing phase named in the configuration's error."""

from __future__ import annotations

import pytest

from orchestrator.artifacts.export_phases import ExportPhases, PhaseClock
from orchestrator.base.errors import ExportError, ModelSpecError

# ExecuTorch 1.5.1's stage artifacts of a static int8 export (duration_ms per StageType value), as recorded.
STAGES_MS = {"source_transform": 0.0, "quantize": 9000.0, "torch_export": 3000.0,
             "to_edge_transform_and_lower": 20000.0, "to_executorch": 1000.0}


def test_stages_go_to_their_phases_and_calibration_leaves_quantization() -> None:
    clock = PhaseClock("'m.py:build' with recipe int8-static")
    clock.add("eager run", 1.0)
    clock.add_stages(STAGES_MS, calibration_s=2.0)
    clock.add("host reference", 0.5)
    clock.add("per-layer replay", 3.5)
    phases = clock.result()
    assert phases.seconds == (("eager run", 1.0), ("capture", 3.0), ("calibration", 2.0), ("quantization", 7.0),
                              ("lowering", 21.0), ("host reference", 0.5), ("per-layer replay", 3.5))
    assert phases.total_s == 38.0 and phases.own_s == 5.0 and phases.own_share == pytest.approx(5 / 38)
    assert phases.line().startswith("eager run 1.0s, capture 3.0s, calibration 2.0s") and phases.line().endswith(
        "(etfarm's own 13%)")
    assert ExportPhases.from_dict(phases.to_dict()) == phases  # meta.json round trip, in phase order


def test_a_failing_phase_is_the_configurations_export_error_and_user_errors_pass() -> None:
    clock = PhaseClock("'m.py:build' with recipe int8-static")
    with pytest.raises(ExportError, match=r"^ETRecord of 'm.py:build' with recipe int8-static failed: "
                                          r"RuntimeError: cannot serialize$"), clock.phase("ETRecord"):
        raise RuntimeError("cannot serialize\nsecond line")
    with pytest.raises(ModelSpecError), clock.phase("eager run"):  # the model's own code: not the exporter's
        raise ModelSpecError("model spec 'm.py:build': running the model raised ValueError")
    assert {name for name, _ in clock.result().seconds} == {"ETRecord", "eager run"}  # timed even when failing


def test_nothing_timed_has_no_share() -> None:
    assert ExportPhases(()).own_share == 0.0 and ExportPhases.from_dict({"lowering": "x"}).seconds == ()
