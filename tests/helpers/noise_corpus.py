"""The noise corpus (benchmarks/noise_corpus.py records it) as verdict sides: real tiny_cnn jobs under five
environments, for unit tests of the verdict logic and for benchmarks/bench_trust.py.

`load()` gives one `Recorded` per job: its environment, its kind (`job`: one model; `ab`: tiny_cnn against a
byte-identical copy in one job, A B B A) and one `Side` per model, with its per-op samples in memory and, where
the corpus has them, each execution's run-queue wait (a run's `clean` mask: no wait). `slowed(side, factor)` is
the side with every sample multiplied (an injected regression).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from orchestrator.app.ab import starting_side
from orchestrator.profiles.op_identity import OpIdentity
from orchestrator.results.contention import clean_mask
from orchestrator.verdicts.compare import Side
from orchestrator.verdicts.device_states import DeviceStates, device_states
from orchestrator.verdicts.estimates import run_medians
from orchestrator.verdicts.op_samples import OpSamples
from orchestrator.verdicts.sides import SideRun

CORPUS = Path(__file__).resolve().parents[1] / "unit" / "verdicts" / "fixtures" / "noise_corpus.npz"
# more A/B jobs of the same environments, recorded later, so interval coverage is measured on more than 4 jobs each
CORPUS_AB = CORPUS.with_name("noise_corpus_ab.npz")
# a second recording (2026-11-28, 6 jobs and 12 A/B jobs an environment) on another VM, whose runner processes settle
# in a fast state or one about 1.9x slower (luck per process), as the testbed's 40-layer MLP does: out of sample for
# rules tuned on the first
CORPUS_STATES = CORPUS.with_name("noise_corpus_states.npz")


@dataclass(frozen=True)
class Recorded:
    env: str
    kind: str  # "job" or "ab"
    index: int
    sides: dict[str, Side]  # model name -> its side


def stored_states(corpus: tuple[Recorded, ...]) -> DeviceStates:
    """What a store holding a recording's separate jobs would show `etfarm compare` of tiny_cnn's speed states on
    that machine (verdicts/device_states.py), every environment's jobs together, as one machine's store holds them."""
    jobs = [(r.sides["cnn"].source, run_medians(r.sides["cnn"].e2e)) for r in corpus if r.kind == "job"]
    return device_states(DeviceStates.nothing_seen("local"), jobs)


@lru_cache(maxsize=4)
def load(path: Path = CORPUS, clean: bool = True) -> tuple[Recorded, ...]:
    """Every job of the corpus; `clean`: statistics on clean executions (as verdicts on a measured run are)."""
    data = np.load(path)
    index = json.loads(bytes(data["meta"]).decode())
    out = []
    for j, job in enumerate(index):
        sides = {name: _side(data, f"j{j}/{name}", f"{job['env']}-{j}", name, info, clean)
                 for name, info in job["models"].items()}
        out.append(Recorded(job["env"], job["kind"], j, sides))
    return tuple(out)


def _side(data: np.lib.npyio.NpzFile, stem: str, source: str, model: str, info: dict, clean: bool) -> Side:
    e2e = data[f"{stem}/e2e"].astype(np.float64)
    wait = data[f"{stem}/wait"].astype(np.float64) if info.get("wait") else None
    runs = []
    for r, row in enumerate(e2e):
        row = row[~np.isnan(row)]
        mask = None if wait is None else clean_mask(row.tolist(), wait[r][: len(row)].tolist())
        kept = row if mask is None or not clean else row[np.asarray(mask)]
        runs.append(SideRun(f"run-{r + 1}", tuple(kept.tolist()), None, clean=mask, dropped=len(row) - len(kept)))
    ops: dict = {}
    for k, label in enumerate(info["ops"]):
        block, module, op, occurrence, basis = label.split("|")
        key = (block, OpIdentity(module, op, int(occurrence), basis))
        arrays = [row[~np.isnan(row)].astype(np.float64) for row in data[f"{stem}/op{k}"]]
        if clean and wait is not None:
            arrays = [a[np.asarray(runs[r].clean)] if len(a) == len(runs[r].clean or ()) else a
                      for r, a in enumerate(arrays)]
        ops[key] = (k, arrays)
    return Side(source, "local", model, tuple(runs), op_samples=OpSamples(ops))


def slowed(side: Side, factor: float) -> Side:
    """The side with every end-to-end and per-op sample `factor` times longer: a regression of known size."""
    runs = tuple(replace(r, execute_ms=tuple(ms * factor for ms in r.execute_ms)) for r in side.runs)
    ops = side.op_samples.ops if side.op_samples is not None else {}
    slow = OpSamples({key: (index, [a * factor for a in arrays]) for key, (index, arrays) in ops.items()},
                     side.op_samples.names if side.op_samples is not None else {})
    return replace(side, runs=runs, op_samples=slow)  # the same job: its source stays


def op_slowed(side: Side, op: str, factor: float) -> Side:
    """The side with one op (by its label, `features.2 max_pool2d`) `factor` times longer, and each run's end-to-end
    samples longer by what that op added in the run (its median times factor - 1): a regression of one layer."""
    import numpy as np

    ops = side.op_samples.ops if side.op_samples is not None else {}
    found = [key for key in ops if key[1].label == op]
    if not found:
        raise KeyError(f"no op {op!r} in {side.source}")
    index, arrays = ops[found[0]]
    added = [float(np.median(a)) * (factor - 1) if len(a) else 0.0 for a in arrays]
    runs = tuple(replace(r, execute_ms=tuple(ms + extra for ms in r.execute_ms))
                 for r, extra in zip(side.runs, added, strict=True))
    slow = dict(ops)
    slow[found[0]] = (index, [a * factor for a in arrays])
    return replace(side, runs=runs, op_samples=OpSamples(slow, side.op_samples.names))  # type: ignore[union-attr]


def pooled(sides: list[Side]) -> Side:
    """Several jobs' sides of one model as one (what `run --ab --until-confident` pools): runs and per-op samples
    end to end, in job order."""
    ops: dict = {}
    for side in sides:
        for key, (index, arrays) in (side.op_samples.ops if side.op_samples is not None else {}).items():
            ops.setdefault(key, (index, []))[1].extend(arrays)
    first = sides[0]
    return replace(first, source="+".join(s.source for s in sides), runs=tuple(r for s in sides for r in s.runs),
                   op_samples=OpSamples(ops))


def taking_turns(jobs: list[Recorded], first: str, second: str) -> tuple[list[Side], list[Side]]:
    """A's and B's sides of pooled A/B jobs that take turns to start (app/ab.py `starting_side`): in odd jobs B ran
    first. The corpus's jobs all ran its copy second; the programs are byte-identical, so an odd job's A is the
    recorded side that ran second."""
    turns = [[j.sides[name] for name in starting_side(first, second, k)] for k, j in enumerate(jobs)]
    return [a for a, _ in turns], [b for _, b in turns]


def envs(corpus: tuple[Recorded, ...]) -> list[str]:
    return list(dict.fromkeys(r.env for r in corpus))
