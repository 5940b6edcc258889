"""The user's own ExecuTorch runtime (`runtime: PATH`), with prefixes assembled from the installed wheel.

A prefix is the wheel's lib/, include/ and share/ copied elsewhere; the runner is built against it
(checked by the build's recorded executorch_DIR), links every backend it offers (the wheel's own
aggregate leaves QNN out), says which registered, and a .pte whose delegate the runtime lacks fails
with one line naming the backend.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from orchestrator import procs
from orchestrator.artifacts import targets
from orchestrator.artifacts.build import RunnerBuild, build_runner, read_build_info
from orchestrator.artifacts.lowering import export_model
from orchestrator.artifacts.modelspec import parse_model_spec

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TINY_CNN = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"


def _prefix(dest: Path, *, without: tuple[str, ...] = ()) -> Path:
    wheel = targets.host_executorch_dir()
    for part in ("lib", "include", "share"):
        shutil.copytree(wheel / part, dest / part, ignore=shutil.ignore_patterns(*without) if part == "lib" else None)
    return dest


def _run(build: RunnerBuild, pte: Path) -> procs.CommandResult:
    argv = [*build.start_words(str(build.root)), "--model_path", str(pte), "--num_executions", "2"]
    return procs.run(argv, env=build.env(str(build.root)), timeout_s=120)


def test_user_runtime_links_every_backend_it_offers(tmp_path: Path) -> None:
    prefix = _prefix(tmp_path / "et-prefix")
    build = build_runner("host", runtime=prefix)
    assert build.runtime == "user" and build.executorch_dir == str(prefix / "share" / "cmake")
    assert read_build_info(build)["executorch_dir"] == str(prefix / "share" / "cmake")
    assert {"XnnpackBackend", "QnnBackend", "OpenvinoBackend"} <= set(build.backends)
    result = _run(build, export_model(parse_model_spec(TINY_CNN)).pte)
    assert result.ok, result.tail()
    assert result.stdout.splitlines()[0].startswith("ETFARM_BACKENDS [") and '"backends": [' in result.stdout


def test_a_delegate_the_runtime_lacks_fails_in_one_line(tmp_path: Path) -> None:
    prefix = _prefix(tmp_path / "no-xnnpack", without=("libexecutorch_backend_xnnpack.so",))
    build = build_runner("host", runtime=prefix)
    assert "XnnpackBackend" not in build.backends and build.backends
    pte = export_model(parse_model_spec(TINY_CNN)).pte
    result = _run(build, pte)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"etfarm_runner: error: program '{pte}' method 'forward' needs backends it does not register: XnnpackBackend "
        f"(registered: {', '.join(build.backends)}; build the runner against a runtime that has them)"]
