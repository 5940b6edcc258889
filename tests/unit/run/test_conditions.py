import pytest

from orchestrator.run.conditions import COOLDOWN_POLL_SEC, cool_down, max_temperature_c
from orchestrator.run.results import ModelResult, ModelStatus, ProcessRun
from orchestrator.stats import coefficient_of_variation


def tracer_overhead(traced: list[float], untraced: list[float]) -> float | None:
    runs = [ProcessRun("run-1", True, tuple(traced))] + ([ProcessRun("e2e-1", False, tuple(untraced))] if untraced else [])
    return ModelResult("m", ModelStatus.OK, tuple(runs)).tracer_overhead


def facts(*millidegrees: int) -> dict:
    return {"thermal": {f"thermal_zone{i}": f"cpu-{i}:{t}" for i, t in enumerate(millidegrees)}}


def test_max_temperature_reads_millidegrees_and_ignores_junk() -> None:
    assert max_temperature_c(facts(41000, 57500)) == 57.5
    assert max_temperature_c({"thermal": {"z": "soc:garbage", "y": "x:45"}}) == 45.0
    assert max_temperature_c({}) is None


def test_cool_down_waits_until_below_threshold() -> None:
    readings = iter([facts(80000), facts(75000), facts(60000)])
    slept: list[float] = []
    said: list[str] = []
    state = cool_down(lambda: next(readings), pause_s=1.0, max_temp_c=65.0, say=said.append, sleep=slept.append)
    assert slept == [1.0, COOLDOWN_POLL_SEC, COOLDOWN_POLL_SEC]
    assert state["max_temp_c"] == 60.0 and not state["too_hot"]
    assert state["cooldown_waited_s"] == 1.0 + 2 * COOLDOWN_POLL_SEC
    assert said == ["cooling down: 80.0 °C > 65.0 °C"]


def test_cool_down_gives_up_and_records_it() -> None:
    said: list[str] = []
    state = cool_down(lambda: facts(90000), pause_s=0, max_temp_c=50.0, say=said.append, sleep=lambda s: None, max_wait_s=6)
    assert state["too_hot"] and "running anyway" in said[-1]


def test_cool_down_without_threshold_only_pauses() -> None:
    slept: list[float] = []
    state = cool_down(lambda: facts(99000), pause_s=0.5, max_temp_c=None, say=print, sleep=slept.append)
    assert slept == [0.5] and state["cooldown_waited_s"] == 0.5


def test_tracer_overhead_and_cv() -> None:
    assert tracer_overhead([1.1, 1.1, 1.2], [1.0, 1.0, 0.9]) == pytest.approx(0.1)
    assert tracer_overhead([1.0], []) is None
    assert coefficient_of_variation([1.0, 1.0]) == 0.0
    assert coefficient_of_variation([1.0, 3.0]) == pytest.approx(2 ** 0.5 / 2)
    assert coefficient_of_variation([5.0]) is None


def test_android_is_as_hot_as_its_skin() -> None:
    """On a phone, --max-temp reads Android's skin temperature (what its own throttling watches), not the hottest zone."""
    phone = {**facts(45200, 41800), "android": {"temp": {"skin_c": 32.5, "battery_c": 29.4}}}
    assert max_temperature_c(phone) == 32.5
    assert max_temperature_c({**facts(45200), "android": {"battery": {"level": 85}}}) == 45.2  # no skin reading
