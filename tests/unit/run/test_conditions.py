import pytest

from device_agents.facts import DeviceFacts
from orchestrator.base.stats import coefficient_of_variation
from orchestrator.results.conditions import COOLDOWN_POLL_SEC, CoolDown, DeviceState, Gate, cool_down, max_temperature_c
from orchestrator.results.model import ModelResult, ModelStatus, ProcessRun


def tracer_overhead(traced: list[float], untraced: list[float]) -> float | None:
    runs = [ProcessRun("run-1", True, tuple(traced))] + ([ProcessRun("e2e-1", False, tuple(untraced))] if untraced else [])
    return ModelResult("m", ModelStatus.OK, tuple(runs)).tracer_overhead


def zones(*millidegrees: int) -> dict:
    return {"thermal": {f"thermal_zone{i}": f"cpu-{i}:{t}" for i, t in enumerate(millidegrees)}}


def facts(*millidegrees: int) -> DeviceFacts:
    return DeviceFacts.from_json(zones(*millidegrees))


def test_max_temperature_reads_millidegrees_and_ignores_junk() -> None:
    assert max_temperature_c(facts(41000, 57500)) == 57.5
    assert max_temperature_c(DeviceFacts.from_json({"thermal": {"z": "soc:garbage", "y": "x:45"}})) == 45.0
    assert max_temperature_c(DeviceFacts()) is None


def test_cool_down_waits_until_below_threshold() -> None:
    readings = iter([facts(80000), facts(75000), facts(60000)])
    slept: list[float] = []
    said: list[str] = []
    state = cool_down(lambda: next(readings), pause_s=1.0, max_temp_c=65.0, say=said.append, sleep=slept.append)
    assert slept == [1.0, COOLDOWN_POLL_SEC, COOLDOWN_POLL_SEC]
    assert state == CoolDown(1.0 + 2 * COOLDOWN_POLL_SEC, Gate(60.0, too_hot=False))
    assert said == ["cooling down: 80.0 °C > 65.0 °C"]


def test_cool_down_gives_up_and_records_it() -> None:
    said: list[str] = []
    state = cool_down(lambda: facts(90000), pause_s=0, max_temp_c=50.0, say=said.append, sleep=lambda s: None, max_wait_s=6)
    assert state.gate == Gate(90.0, too_hot=True) and "running anyway" in said[-1]


def test_cool_down_without_threshold_only_pauses() -> None:
    slept: list[float] = []
    state = cool_down(lambda: facts(99000), pause_s=0.5, max_temp_c=None, say=print, sleep=slept.append)
    assert slept == [0.5] and state == CoolDown(0.5)


def test_tracer_overhead_and_cv() -> None:
    assert tracer_overhead([1.1, 1.1, 1.2], [1.0, 1.0, 0.9]) == pytest.approx(0.1)
    assert tracer_overhead([1.0], []) is None
    assert coefficient_of_variation([1.0, 1.0]) == 0.0
    assert coefficient_of_variation([1.0, 3.0]) == pytest.approx(2 ** 0.5 / 2)
    assert coefficient_of_variation([5.0]) is None


def test_android_is_as_hot_as_its_skin() -> None:
    """On a phone, --max-temp reads Android's skin temperature (what its own throttling watches), not the hottest zone."""
    phone = {**zones(45200, 41800), "android": {"temp": {"skin_c": 32.5, "battery_c": 29.4}}}
    assert max_temperature_c(DeviceFacts.from_json(phone)) == 32.5
    no_skin = {**zones(45200), "android": {"battery": {"level": 85}}}
    assert max_temperature_c(DeviceFacts.from_json(no_skin)) == 45.2


@pytest.mark.parametrize("written", [
    {"facts": {"cores": 2, "thermal": {"thermal_zone0": "cpu:41000"}}, "cooldown_waited_s": 0.0},
    {"facts": {}, "cooldown_waited_s": 1.5, "max_temp_c": None, "too_hot": False},  # gated, no temperature read
    {"facts": {"cores": 2}, "cooldown_waited_s": 2, "max_temp_c": 61.5, "too_hot": True},
    {"temp": 41.0}, {}, {"facts": "odd", "too_hot": "yes"},  # other etfarms', or a hand-edited manifest's
])
def test_a_device_state_reads_and_writes_back_as_etfarm_wrote_it(written: dict) -> None:
    state = DeviceState.from_json(written)
    assert state.to_json() == dict(sorted(written.items())) and list(state.to_json()) == sorted(written)
    assert DeviceState.from_json(state.to_json()) == state


def test_a_run_records_its_facts_its_wait_and_its_gate() -> None:
    gated = DeviceState.of(facts(41000), CoolDown(3.0, Gate(41.0, too_hot=False))).to_json()
    assert gated == {"cooldown_waited_s": 3.0, "facts": zones(41000), "max_temp_c": 41.0, "too_hot": False}
    assert DeviceState.of(DeviceFacts(), CoolDown()).to_json() == {"cooldown_waited_s": 0.0, "facts": {}}
