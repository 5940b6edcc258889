"""Verdicts recorded beside a run (DIR/verdicts.json): written by `nightly`, read by `last-good` and `history`
through the one typed reader of the file (results/verdicts_file.py).

Light on purpose (no numpy): `etfarm history` reads them to show a nightly's regressed run as regressed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.base.codec import encode
from orchestrator.results.verdicts_file import write_verdicts
from orchestrator.verdicts.statistics import Verdict

if TYPE_CHECKING:
    from orchestrator.results.record import RunRecord
    from orchestrator.verdicts.compare import Comparison

__all__ = ["WRONG_OUTPUTS", "marked_regressed", "marked_unjudged", "record_verdicts", "recorded_verdicts"]
WRONG_OUTPUTS = "wrong-outputs"  # a pair whose outputs failed verification, whatever its latency did


def record_verdicts(run_dir: Path, comparison: Comparison) -> Path:
    """Write the comparison beside the run (DIR/verdicts.json), for `last-good`, `history` and people."""
    return write_verdicts(run_dir, encode(comparison))


def recorded_verdicts(run: RunRecord) -> dict[tuple[str, str], str]:
    """The verdict recorded beside the run per (device, model): `regressed` for a pair that regressed anywhere (end
    to end, an op, a metric, its series), `wrong-outputs` for a failed verification, else the pair's verdict.
    Empty when nothing judged the run or its file cannot be read."""
    return {(p.device, p.model_b): WRONG_OUTPUTS if p.verification_failed else
            Verdict.REGRESSED.value if p.regressed else p.verdict for p in run.verdicts}


def marked_regressed(run: RunRecord, device: str, model: str) -> bool:
    """Whether the run's recorded verdicts say (device, model) regressed or gave wrong outputs: never a baseline."""
    return recorded_verdicts(run).get((device, model)) in (Verdict.REGRESSED.value, WRONG_OUTPUTS)


def marked_unjudged(run: RunRecord, device: str, model: str) -> bool:
    """Whether the run's recorded verdicts left (device, model) `inconclusive`: a good run, but not the baseline a
    later night should compare with while a judged one is near (app/baseline.py)."""
    return recorded_verdicts(run).get((device, model)) == Verdict.INCONCLUSIVE.value
