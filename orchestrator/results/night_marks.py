"""What a night left beside each of its run directories, for readers that start from the store (`etfarm publish`).

A run's verdicts are in DIR/verdicts.json (recorded.record_verdicts; read by results/verdicts_file.py); which
night the run belongs to, the night's page and its confirmations are in DIR/night.json, written by `etfarm
nightly` once the night's page is written (`record_night`). `read_marks(run_dir)` reads both back as typed
marks; a file that is missing or unreadable gives none (a plain `etfarm run`, or a night from before
night.json).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.base.cache import read_json_object, write_json_atomic
from orchestrator.base.ids import is_id
from orchestrator.results.layout import NIGHT
from orchestrator.results.verdicts_file import recorded_pairs

NIGHT_JSON = NIGHT


@dataclass(frozen=True)
class PairMark:
    """A (device, model)'s verdict in a run, as its verdicts.json says."""

    verdict: str
    regressed: bool
    ratio: float | None  # the run against its baseline (B / A of the verdict statistic)


@dataclass(frozen=True)
class NightMark:
    """The night a run belongs to: its id, its page, its final verdict counts, its confirmations."""

    night_id: str
    page: str | None  # the night's HTML page, as written
    verdicts: Mapping[str, int]
    confirmations: tuple[Mapping[str, Any], ...]  # nightly.Confirmation.to_dict()s
    bisects: tuple[Mapping[str, Any], ...] = ()  # app/bisect_night.NightBisect.to_dict()s (plan `bisect: true`)

    def confirmed(self, run_id: str, device: str, model: str) -> bool | None:
        """Whether the regression `run_id` found on (device, model) showed again (None: it was not run again)."""
        for c in self.confirmations:
            if (c.get("first_run"), c.get("device"), c.get("model")) == (run_id, device, model):
                return bool(c.get("confirmed"))
        return None

    def culprit(self, run_id: str, device: str, model: str) -> str | None:
        """The commit the night's bisect named for the regression `run_id` found on (device, model), if any."""
        for b in self.bisects:
            if (b.get("run_id"), b.get("device"), b.get("model")) == (run_id, device, model) and b.get("culprit"):
                return str(b["culprit"])
        return None

    def confirms(self, run_id: str) -> str | None:
        """The run whose regression `run_id` ran again to confirm, if it is a confirmation job."""
        return next((str(c.get("first_run")) for c in self.confirmations if c.get("confirm_run") == run_id), None)


def record_night(run_dirs: Sequence[Path], night_id: str, page: Path | None, verdicts: Mapping[str, int],
                 confirmations: Sequence[Mapping[str, Any]], extra: Mapping[str, Any] | None = None) -> None:
    """DIR/night.json beside every run directory of the night (`extra`: its bisects, its repository's HEAD)."""
    data = {"night": night_id, "page": str(Path(page).resolve()) if page is not None else None, "verdicts": dict(verdicts),
            "confirmations": list(confirmations), **(extra or {})}
    for run_dir in run_dirs:
        write_json_atomic(Path(run_dir) / NIGHT_JSON, data)


def read_marks(run_dir: Path) -> tuple[dict[tuple[str, str], PairMark], NightMark | None]:
    """The run's verdicts per (device, model) and its night, from the files beside it."""
    marks = {(p.device, p.model_b): PairMark(p.verdict, p.regressed, p.ratio) for p in recorded_pairs(run_dir)}
    night = read_json_object(run_dir / NIGHT_JSON)
    if not is_id(night.get("night")):  # none, or not an id: it would name a site's file (nights/<id>.html)
        return marks, None
    counts = night.get("verdicts") if isinstance(night.get("verdicts"), dict) else {}
    confirmations = tuple(c for c in night.get("confirmations") or () if isinstance(c, dict))
    bisects = tuple(b for b in night.get("bisects") or () if isinstance(b, dict))
    return marks, NightMark(str(night["night"]), str(night["page"]) if night.get("page") else None,
                            {str(k): int(v) for k, v in counts.items() if isinstance(v, int)}, confirmations, bisects)

