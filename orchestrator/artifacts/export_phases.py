"""The phases of a recipe export and their times (docs/guide/model-zoo.md, "Export phases").

A recipe export is ExecuTorch's pipeline (capture, calibration, quantization, lowering) followed by etfarm's
own work around it (the ETRecord saved with its inputs, the program run on the host for the reference
outputs, the per-layer replays of the program and of the fp32 eager model). ExecuTorch's export session
times its own stages (`PipelineArtifact.context["duration_ms"]`); etfarm times the calibration batches it
feeds and its own phases. The progress line names each phase with its time and the share of etfarm's own
phases (`own_share`), which should stay under a quarter of the export.

A phase that raises is that configuration's failure: `PhaseClock.phase` turns anything but etfarm's own
errors into a `ConfigurationFailed` (an ExportError) naming the phase and the tool's own message
(run/engine/sweep.py leaves it out).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from orchestrator.base.errors import ConfigurationFailed, EtfarmError, one_line

# In the order they run; the last three are etfarm's own (the eager run is the fp32 model, ~ one forward).
PHASES = ("eager run", "capture", "calibration", "quantization", "lowering", "ETRecord", "host reference",
          "per-layer replay")
OWN_PHASES = frozenset({"eager run", "host reference", "per-layer replay"})

# ExecuTorch's stage types (executorch.export.types.StageType values) by the phase they belong to.
STAGE_PHASES = {
    "source_transform": "quantization", "quantize": "quantization", "torch_export": "capture",
    "to_edge_transform_and_lower": "lowering", "to_edge": "lowering", "edge_program_manager_transform": "lowering",
    "to_backend": "lowering", "to_executorch": "lowering",
}


@dataclass(frozen=True)
class ExportPhases:
    """Seconds per phase of one export, in PHASES order (a phase that did not run is absent)."""

    seconds: tuple[tuple[str, float], ...]

    @property
    def total_s(self) -> float:
        return sum(s for _, s in self.seconds)

    @property
    def own_s(self) -> float:
        return sum(s for name, s in self.seconds if name in OWN_PHASES)

    @property
    def own_share(self) -> float:
        """etfarm's own phases as a share of the whole export (0 when nothing was timed)."""
        return self.own_s / self.total_s if self.total_s > 0 else 0.0

    def line(self) -> str:
        parts = ", ".join(f"{name} {s:.1f}s" for name, s in self.seconds)
        return f"{parts} (etfarm's own {self.own_share:.0%})"

    def to_dict(self) -> dict[str, float]:
        return {name: round(s, 3) for name, s in self.seconds}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportPhases:
        return cls(tuple((name, float(data[name])) for name in PHASES if isinstance(data.get(name), (int, float))))


class PhaseClock:
    """Adds up the seconds of each phase of one export; `phase` also names a failing phase in its error."""

    def __init__(self, what: str) -> None:
        self._what = what  # "'hf_models.py:bert_tiny' with recipe int8-static": who failed, in the error
        self._seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        self._seconds[name] = self._seconds.get(name, 0.0) + max(0.0, seconds)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        except EtfarmError:
            raise
        except Exception as exc:  # noqa: BLE001  (the tool's own reason, whatever it raised)
            raise ConfigurationFailed(f"{name} of {self._what} failed: {type(exc).__name__}: {first_line(exc)}") from None
        finally:
            self.add(name, time.perf_counter() - started)

    def add_stages(self, stage_ms: Mapping[str, float], calibration_s: float) -> None:
        """ExecuTorch's stage times, by phase; the calibration batches' time moves out of quantization."""
        for stage, ms in stage_ms.items():
            self.add(STAGE_PHASES.get(stage, "lowering"), ms / 1000)
        if calibration_s > 0:
            self.add("calibration", calibration_s)
            self._seconds["quantization"] = max(0.0, self._seconds.get("quantization", 0.0) - calibration_s)

    def result(self) -> ExportPhases:
        return ExportPhases(tuple((name, self._seconds[name]) for name in PHASES if name in self._seconds))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return one_line(text.splitlines()[0]) if text else ""
