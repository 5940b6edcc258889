"""DIR/verdicts.json read back typed: the one reader of the verdicts a comparison recorded beside a run.

`etfarm nightly` writes the file (verdicts/recorded.py `record_verdicts`: the comparison's own dict); `history`,
`last-good` and `publish` need only a few of its fields per pair: which (device, model), its verdict, whether it
regressed anywhere (end to end, an op, a metric, its series) or gave wrong outputs, and its ratio. They are read
here through the codec (base/codec.py: types checked, unknown keys ignored). A missing or unreadable file reads
as no verdict (a plain run); so does a pair that does not decode or names no device or model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.base.cache import read_json_object, write_json_atomic
from orchestrator.base.codec import FieldError, decode
from orchestrator.results.layout import VERDICTS

VERDICTS_JSON = VERDICTS


@dataclass(frozen=True)
class RecordedEstimate:
    ratio: float | None = None  # B / A of the verdict's statistic


@dataclass(frozen=True)
class RecordedPair:
    """One (device, model) pair of a recorded comparison, as far as readers of the record need it."""

    device: str
    model_b: str
    verdict: str = ""
    regressed: bool = False  # anywhere: end to end, an op, a metric, its series
    verification_failed: bool = False
    estimate: RecordedEstimate | None = None

    @property
    def ratio(self) -> float | None:
        return self.estimate.ratio if self.estimate is not None else None


def write_verdicts(run_dir: Path, comparison: dict[str, object]) -> Path:
    """Write a comparison's dict beside the run (DIR/verdicts.json, atomically); the file written."""
    path = Path(run_dir) / VERDICTS_JSON
    write_json_atomic(path, comparison)
    return path


def recorded_pairs(run_dir: Path) -> tuple[RecordedPair, ...]:
    """The pairs of the comparison recorded beside the run (none when nothing judged it or its file is unreadable)."""
    pairs = read_json_object(Path(run_dir) / VERDICTS_JSON).get("pairs")
    out = []
    for raw in pairs if isinstance(pairs, list) else ():
        try:
            pair = decode(RecordedPair, raw)
        except FieldError:
            continue
        if pair.device and pair.model_b:
            out.append(pair)
    return tuple(out)
