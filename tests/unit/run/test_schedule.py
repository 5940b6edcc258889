"""run.schedule: the order of process runs on a device (interleaved rounds, sequential, abba)."""

from __future__ import annotations

from orchestrator.run.schedule import RunOrder, schedule_runs


def labels(order: RunOrder, seed: int = 0, runs: int = 4) -> list[tuple[str, str]]:
    return [(s.model, s.label) for s in schedule_runs(["a", "b", "c"], runs, 1, order, seed)]


def test_interleaved_rounds_run_every_model_once_in_a_seeded_shuffle() -> None:
    got = labels(RunOrder.INTERLEAVED)
    traced = got[:12]
    for k in range(4):  # round k holds run k+1 of every model
        assert sorted(traced[3 * k: 3 * k + 3]) == [(m, f"run-{k + 1}") for m in "abc"]
    assert got == labels(RunOrder.INTERLEAVED)  # deterministic
    orders = {tuple(labels(RunOrder.INTERLEAVED, seed)[:3]) for seed in range(20)}
    assert len(orders) > 1  # the seed changes the order
    assert sorted(got[12:]) == [(m, "e2e-1") for m in "abc"]  # untraced runs come last


def test_sequential_keeps_each_models_runs_together() -> None:
    got = labels(RunOrder.SEQUENTIAL, runs=2)
    assert got[:6] == [("a", "run-1"), ("a", "run-2"), ("b", "run-1"), ("b", "run-2"), ("c", "run-1"), ("c", "run-2")]


def test_one_model_is_the_same_in_every_order() -> None:
    assert {tuple(schedule_runs(["m"], 3, 0, order)) for order in RunOrder} == {tuple(schedule_runs(["m"], 3, 0))}
