"""What a night left beside each of its run directories, for readers that start from the store (`etfarm publish`).

A run's verdicts are in DIR/verdicts.json (recorded.record_verdicts; read by results/verdicts_file.py); which
night the run belongs to, the night's page, its confirmations and bisects and its repository's HEAD are in
DIR/night.json, a `NightMark` written by `etfarm nightly` once the night's page is written (`record_night`) and
read back by the codec (`read_night`). `read_marks(run_dir)` reads both back as typed marks; a file that is
missing or unreadable gives none (a plain `etfarm run`, or a night from before night.json), and an entry of the
wrong kind in it is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from orchestrator.base.cache import read_json_object, write_json_atomic
from orchestrator.base.codec import FieldError, decode, encode, named
from orchestrator.base.ids import is_id
from orchestrator.results.layout import NIGHT
from orchestrator.results.verdicts_file import RecordedPair, recorded_pairs

NIGHT_JSON = NIGHT


@dataclass(frozen=True)
class PairMark:
    """A (device, model)'s verdict in a run, as its verdicts.json says."""

    verdict: str
    regressed: bool
    ratio: float | None  # the run against its baseline (B / A of the verdict statistic)


@dataclass(frozen=True)
class NightMark:
    """The night a run belongs to (DIR/night.json): its id, its page, its final verdict counts, its confirmations,
    its bisects and the HEAD of its plan's repository."""

    night_id: str = field(metadata=named("night"))
    page: str | None = None  # the night's HTML page, as written
    verdicts: Mapping[str, int] = field(default_factory=dict)
    # verdicts/confirmation.Confirmations and app/bisect_night.NightBisects (plan `bisect: true`), classes above this
    # one: written by the codec, read back as their JSON objects
    confirmations: tuple[Any, ...] = ()
    bisects: tuple[Any, ...] = ()
    repo_head: str | None = None  # the plan's `repo:` HEAD when the night ran

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

    def first_run(self, device: str, model: str) -> str | None:
        """The night's job whose (device, model) the night confirmed, if it did: what a confirmation job pooled after
        the first (named nowhere in the night, Job.confirms tells it) ran again."""
        return next((str(c.get("first_run")) for c in self.confirmations
                     if (c.get("device"), c.get("model")) == (device, model)), None)


def record_night(run_dirs: Sequence[Path], night_id: str, page: Path | None, verdicts: Mapping[str, int],
                 confirmations: Sequence[Any], bisects: Sequence[Any] = (), repo_head: str | None = None) -> None:
    """DIR/night.json beside every run directory of the night."""
    night = NightMark(night_id, str(Path(page).resolve()) if page is not None else None, dict(verdicts),
                      tuple(confirmations), tuple(bisects), repo_head)
    for run_dir in run_dirs:
        write_json_atomic(Path(run_dir) / NIGHT_JSON, encode(night))


def read_night(run_dir: Path) -> NightMark | None:
    """The night beside the run (None: no night.json, unreadable, or no night id in it); entries of the wrong kind
    (a count that is no whole number, a confirmation or bisect that is no object) are left out."""
    try:
        night = decode(NightMark, read_json_object(Path(run_dir) / NIGHT_JSON))
    except FieldError:
        return None
    if not is_id(night.night_id):  # not an id: it would name a site's file (nights/<id>.html)
        return None
    return replace(night, page=night.page or None,
                   verdicts={str(k): v for k, v in night.verdicts.items() if type(v) is int},
                   confirmations=tuple(c for c in night.confirmations if isinstance(c, Mapping)),
                   bisects=tuple(b for b in night.bisects if isinstance(b, Mapping)))


def read_marks(run_dir: Path, pairs: Sequence[RecordedPair] | None = None) -> tuple[dict[tuple[str, str], PairMark],
                                                                                  NightMark | None]:
    """The run's verdicts per (device, model) and its night, from the files beside it (`pairs`: its verdicts.json as
    a reader already has it, read again when not given)."""
    pairs = recorded_pairs(run_dir) if pairs is None else pairs
    marks = {(p.device, p.model_b): PairMark(p.verdict, p.regressed, p.ratio) for p in pairs}
    return marks, read_night(run_dir)

