"""DIR/samples.npz: the per-op samples of a finished run, written once by the job beside stats.csv, so that
`compare`, `report` and `store import` never parse an ETDump again.

One numpy .npz (compressed, no pickles) holds, per (device, model) whose ETDumps the job read, every sample they
hold as columns (`run`, `block`, `event_index`, `iteration`, `duration_ms`: profiles/analysis_core.py `SampleSet`)
and `contended`, the samples the statistics left out (profiles/contended.py). Member `index` (UTF-8 JSON) says
which pairs are there and what each column's codes mean: run labels, and per block its RunSignature, its events
and the file order of each run's blocks, so the runs of several sets join as one read of their ETDumps would
(`joined_runs`). Nothing the ETRecord or the .pte link is kept: stats.csv has it.

A (device, model) missing from the file (a run directory written before the file, or a model whose analysis
failed) is read from its ETDumps by whoever needs it, as before.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.base.cache import write_bytes_atomic
from orchestrator.base.errors import DataError
from orchestrator.profiles.analysis_core import SampleSet
from orchestrator.profiles.etdump_events import EventInfo, Signature, block_key
from orchestrator.profiles.file_memo import FileMemo, file_key
from orchestrator.profiles.stat_rows import ModelStats

FORMAT = 1
COLUMNS = ("run", "block", "event_index", "iteration", "duration_ms", "contended")
_EVENT_FIELDS = ("index", "name", "instruction_id", "delegate_debug_identifier", "is_delegated_op", "has_perf")


@dataclass(frozen=True, eq=False)
class PairSamples:
    """One (device, model)'s samples as the file records them: every sample, and which were left out."""

    device: str
    model: str
    samples: SampleSet
    contended: np.ndarray  # bool per sample

    def as_stats(self, rows: Sequence[Any] = ()) -> ModelStats:
        """The pair as the job held it in memory (statistics `rows` beside)."""
        return ModelStats(self.device, self.model, tuple(rows), self.samples,
                          self.contended if self.contended.any() else None)


def write_samples(path: Path, stats: Iterable[ModelStats]) -> bool:
    """Write the samples of every (device, model) that has them (atomically); False when none has (then no file:
    one left from before would speak for runs it does not hold)."""
    index: list[dict[str, Any]] = []
    arrays: dict[str, np.ndarray] = {}
    for k, found in enumerate(s for s in stats if s.samples is not None and s.samples.block_signatures is not None):
        samples = found.samples
        assert samples is not None and samples.block_signatures is not None and samples.block_order is not None
        index.append({"device": found.device, "model": found.model, "runs": [str(x) for x in samples.run_labels],
                      "blocks": [{"key": key, "signature": signature,
                                  "events": [[getattr(e, f) for f in _EVENT_FIELDS] for e in events]}
                                 for key, signature, events in zip(samples.block_keys, samples.block_signatures,
                                                                   samples.block_events, strict=True)],
                      "order": [list(o) for o in samples.block_order]})
        contended = found.contended if found.contended is not None else np.zeros(samples.duration_ms.size, bool)
        for name, column in zip(COLUMNS, (samples.run, samples.block, samples.event_index, samples.iteration,
                                          samples.duration_ms, contended), strict=True):
            arrays[f"{k}.{name}"] = np.asarray(column)
    if not index:
        path.unlink(missing_ok=True)
        return False
    text = json.dumps({"format": FORMAT, "pairs": index}, separators=(",", ":"))
    buffer = io.BytesIO()
    np.savez_compressed(buffer, index=np.frombuffer(text.encode(), dtype=np.uint8), **arrays)
    write_bytes_atomic(path, buffer.getvalue())
    return True


class SamplesFile:
    """A run's samples file, read lazily: its index when first asked, a pair's columns when that pair is."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with np.load(path, allow_pickle=False) as npz:
            index = json.loads(npz["index"].tobytes())
        if index.get("format") != FORMAT:
            raise DataError(f"{path}: samples file format {index.get('format')!r}, this etfarm reads {FORMAT}")
        self._pairs = {(p["device"], p["model"]): (k, p) for k, p in enumerate(index["pairs"])}

    def pairs(self) -> list[tuple[str, str]]:
        return list(self._pairs)

    def has(self, device: str, model: str) -> bool:
        return (device, model) in self._pairs

    def pair(self, device: str, model: str) -> PairSamples | None:
        """The pair's samples (None when the file does not hold it)."""
        found = self._pairs.get((device, model))
        if found is None:
            return None
        try:
            return self._read(device, model, *found)
        except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile):  # torn or foreign: the ETDumps then
            return None

    def _read(self, device: str, model: str, k: int, meta: dict[str, Any]) -> PairSamples:
        with np.load(self.path, allow_pickle=False) as npz:
            run, block, event_index, iteration, duration, contended = (npz[f"{k}.{c}"] for c in COLUMNS)
        blocks = meta["blocks"]
        samples = SampleSet(run, block, event_index, iteration, duration, run_labels=tuple(meta["runs"]),
                            block_keys=tuple(b["key"] for b in blocks),
                            block_events=tuple(tuple(EventInfo(*e) for e in b["events"]) for b in blocks),
                            block_links=None, block_signatures=tuple(_tuples(b["signature"]) for b in blocks),
                            block_order=tuple(tuple(o) for o in meta["order"]))
        return PairSamples(device, model, samples, contended)


def read_samples(path: Path) -> SamplesFile | None:
    """The run's samples file, when there is one it can read (None: absent, or unreadable: read the ETDumps)."""
    if not path.is_file():
        return None
    try:
        return _OPENED.get([file_key(path)], lambda: SamplesFile(path))
    except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile, DataError):
        return None


def pair_samples(path: Path, device: str, model: str) -> PairSamples | None:
    """One (device, model)'s recorded samples from the run's samples file at `path` (None: not recorded there)."""
    found = read_samples(path)
    return found.pair(device, model) if found is not None else None


def joined_runs(pieces: Sequence[tuple[SampleSet, str]]) -> SampleSet:
    """One set of the given runs (each a set and one of its run labels), in order, as reading their ETDumps together
    would give it: blocks joined by RunSignature, keyed by first appearance, samples in file order."""
    codes: dict[Signature, int] = {}
    keys: list[str] = []
    events: list[tuple[EventInfo, ...]] = []
    uses: dict[str, int] = {}
    order: list[tuple[int, ...]] = []
    parts: list[tuple[np.ndarray, ...]] = []
    for new_run, (samples, label) in enumerate(pieces):
        assert samples.block_signatures is not None and samples.block_order is not None
        run = samples.run_labels.index(label)
        remap = np.full(len(samples.block_keys), -1, dtype=np.int32)
        seen = []
        for b in samples.block_order[run]:
            signature = samples.block_signatures[b]
            code = codes.get(signature)
            if code is None:
                code = codes[signature] = len(keys)
                name = signature[0]
                uses[name] = uses.get(name, 0) + 1
                keys.append(block_key(name, uses[name]))
                events.append(samples.block_events[b])
            remap[b] = code
            seen.append(code)
        order.append(tuple(seen))
        chosen = samples.run == run
        parts.append((np.full(int(chosen.sum()), new_run, dtype=np.int32), remap[samples.block[chosen]],
                      samples.event_index[chosen], samples.iteration[chosen], samples.duration_ms[chosen]))
    columns = ([np.concatenate(c) for c in zip(*parts, strict=True)] if parts
               else [np.zeros(0, np.int32)] * 4 + [np.zeros(0)])
    return SampleSet(*columns, run_labels=tuple(label for _, label in pieces), block_keys=tuple(keys),
                     block_events=tuple(events), block_links=None, block_signatures=tuple(codes),
                     block_order=tuple(order))


def _tuples(value: Any) -> Any:
    """JSON's lists back into the tuples a RunSignature is made of (hashable, equal to the ETDump's own)."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


_OPENED: FileMemo[SamplesFile] = FileMemo()  # a file's index, read once while the file stays as it is
