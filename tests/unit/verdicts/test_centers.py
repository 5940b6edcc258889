"""The registry of verdict statistics (verdicts/centers/): every Center is one module's statistic, and a new statistic
is one module: dropped into the package, it is a choice with its help, its name and its estimates."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from orchestrator.verdicts import centers
from orchestrator.verdicts.statistics import CENTER_HELP, Center, check_center, estimate, run_median, statistic_name

ROOT = Path(__file__).resolve().parents[3]


def test_every_center_is_one_module_statistic() -> None:
    modules = {m.name for m in pkgutil.iter_modules(centers.__path__)} - {"base"}
    by_module = {type(s).__module__.rsplit(".", 1)[1]: s for s in centers.registered()}
    assert set(by_module) == modules  # each module of the package registers one statistic, and only they do
    assert [s.name for s in centers.registered()] == [c.value for c in Center]
    for c in Center:
        stat = centers.find(c.value)
        assert stat is not None and stat.name == c.value
        assert statistic_name(c) == stat.label and stat.help in CENTER_HELP
        assert check_center(c.value) == c.value


def test_each_statistic_reduces_per_run_medians_as_it_says() -> None:
    runs = [[10.0, 10.2, 9.9], [12.0, 12.1, 11.9], [10.5, 10.4, 10.6], [20.0, 20.1, 19.9]]
    medians = [float(np.median(r)) for r in runs]
    assert run_median(runs, "mean") == np.mean(medians)
    assert run_median(runs, "fast") == min(medians)
    values = np.array([[[1.0, 2.0], [3.0, 4.0]]])  # (ops, runs, resamples)
    assert centers.find("mean").resampled(values).tolist() == [[2.0, 3.0]]
    assert centers.find("fast").resampled(values).tolist() == [[1.0, 2.0]]


NEW_STATISTIC = '''
from orchestrator.verdicts.centers.base import CenterStatistic, register


@register
class Median(CenterStatistic):
    name = "median"
    label = "median run median"
    help = "'median' (the median of them)"
    order = 3
    help_order = 3
    described = "median of per-run medians"

    def of_medians(self, medians):
        import numpy as np

        return float(np.median(medians))

    def resampled(self, medians):
        import numpy as np

        return np.median(medians, axis=1)
'''

PROBE = '''
import json, sys
import orchestrator.verdicts.centers as centers
centers.__path__.append(sys.argv[1])  # the new module beside the package's own, as if dropped into it
centers.discover()
from orchestrator.report.terminal.verdicts import legend
from orchestrator.verdicts.pair_verdicts import Comparison
from orchestrator.verdicts.sides import Side, SideRun
from orchestrator.verdicts.compare import compare_sides
from orchestrator.verdicts.statistics import CENTER_HELP, Center, VerdictSettings, check_center, estimate, statistic_name

a = [[10.0 + k, 10.1 + k, 9.9 + k] for k in range(6)]
b = [[20.0 + k, 20.1 + k, 19.9 + k] for k in range(6)]
found = estimate(a, b, resamples=200, center="median")
settings = VerdictSettings(resamples=200, center="median")
side = lambda runs, src: Side(src, "dev", "m", tuple(SideRun(str(k), tuple(r), None) for k, r in enumerate(runs)))
pair = compare_sides(side(a, "A"), side(b, "B"), settings, per_op=False)
print(json.dumps({"choice": check_center("median"), "help": CENTER_HELP, "name": statistic_name("median"),
                  "enum": [c.value for c in Center], "ratio": found.ratio, "verdict": pair.verdict.value,
                  "legend": legend(Comparison("A", "B", settings, (pair,)))}))
'''


def test_a_new_statistic_is_one_module(tmp_path: Path) -> None:
    """The statistic's module alone (nothing else edited) makes it a choice, in --center's help, named in columns,
    estimated, judged and described in the legend."""
    (tmp_path / "median.py").write_text(NEW_STATISTIC)
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=120)
    found = json.loads(out.stdout)
    assert found["choice"] == "median" and found["enum"][-1] == "median"
    assert "'median' (the median of them)" in found["help"] and found["name"] == "median run median"
    assert found["ratio"] == (np.median([20.0 + k for k in range(6)]) / np.median([10.0 + k for k in range(6)]))
    assert found["verdict"] == "regressed"
    assert "ratio B/A of the median of per-run medians" in found["legend"]
    assert check_center("mean") and "median" not in [c.value for c in Center]  # this process never saw it


def test_a_name_registered_twice_is_refused() -> None:
    import pytest

    class Again(centers.CenterStatistic):
        name = "mean"

    with pytest.raises(ValueError, match="registered twice"):
        centers.register(Again)
    assert estimate([[1.0]] * 4, [[2.0]] * 4, resamples=50).ratio == 2.0  # the original still answers
