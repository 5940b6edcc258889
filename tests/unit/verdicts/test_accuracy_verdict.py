"""An accuracy drop is a verdict of its own: SNR down by more than 3 dB, or top-1 agreement by more than 1 %."""

from __future__ import annotations

from orchestrator.results.accuracy import Accuracy
from orchestrator.verdicts.accuracy import SNR_DROP_DB, accuracy_verdict


def acc(snr: float | None, top1: float | None = 1.0) -> Accuracy:
    return Accuracy(snr, 0.01, 0.99, top1, 10 if top1 is not None else 0, 2)


def test_snr_down_beyond_the_threshold_drops() -> None:
    held = accuracy_verdict(acc(40.0), acc(40.0 - SNR_DROP_DB + 0.1))
    assert held is not None and not held.dropped and held.reason.startswith("accuracy held")
    dropped = accuracy_verdict(acc(40.0), acc(30.0))
    assert dropped is not None and dropped.dropped
    assert dropped.reason == "SNR 40.0 dB -> 30.0 dB (down 10.0 dB, beyond 3 dB)"


def test_top1_agreement_down_drops_even_when_snr_holds() -> None:
    found = accuracy_verdict(acc(40.0, 1.0), acc(39.5, 0.9))
    assert found is not None and found.dropped and "top-1 agreement 100% -> 90%" in found.reason


def test_exact_outputs_are_infinite_snr() -> None:
    assert not accuracy_verdict(acc(None), acc(None)).dropped  # type: ignore[union-attr]
    worse = accuracy_verdict(acc(None), acc(60.0))
    assert worse is not None and worse.dropped and "SNR exact -> 60.0 dB" in worse.reason
    assert not accuracy_verdict(acc(20.0), acc(None)).dropped  # type: ignore[union-attr]


def test_nothing_to_judge_without_accuracy_on_both_sides() -> None:
    assert accuracy_verdict(None, acc(30.0)) is None
    assert accuracy_verdict(acc(30.0), Accuracy(None, None, None, detail="no outputs")) is None
