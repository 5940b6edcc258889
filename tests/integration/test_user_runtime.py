"""The user's own ExecuTorch runtime (`runtime: PATH`), with prefixes assembled from the installed wheel.

A prefix is the wheel's lib/, include/ and share/ copied elsewhere; the runner is built against it
(checked by the build's recorded executorch_DIR), links every backend it offers (the wheel's own
aggregate leaves QNN out), says which registered, and a .pte whose delegate the runtime lacks fails
with one line naming the backend. Through the inventory (`runtime: PATH`) too: `etfarm run` builds per target and
runtime, records which ran, and a device whose runtime cannot load the program fails with the runner's one line.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from device_agents import DeviceSpec
from orchestrator.artifacts import targets
from orchestrator.artifacts.build import RunnerBuild, build_runner, read_build_info
from orchestrator.artifacts.lowering import export_model
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base import procs
from orchestrator.results.model import load_manifest
from tests.helpers.inventory import write_inventory

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


@pytest.fixture(scope="module")
def full_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _prefix(tmp_path_factory.mktemp("user-runtime") / "et-prefix")


@pytest.fixture(scope="module")
def no_xnnpack_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _prefix(tmp_path_factory.mktemp("user-runtime") / "no-xnnpack", without=("libexecutorch_backend_xnnpack.so",))


def test_user_runtime_links_every_backend_it_offers(full_prefix: Path) -> None:
    prefix = full_prefix
    build = build_runner("host", runtime=prefix)
    assert build.runtime == "user" and build.executorch_dir == str(prefix / "share" / "cmake")
    assert read_build_info(build)["executorch_dir"] == str(prefix / "share" / "cmake")
    assert {"XnnpackBackend", "QnnBackend", "OpenvinoBackend"} <= set(build.backends)
    result = _run(build, export_model(parse_model_spec(TINY_CNN)).pte)
    assert result.ok, result.tail()
    assert result.stdout.splitlines()[0].startswith("ETFARM_BACKENDS [") and '"backends": [' in result.stdout


def test_a_delegate_the_runtime_lacks_fails_in_one_line(no_xnnpack_prefix: Path) -> None:
    build = build_runner("host", runtime=no_xnnpack_prefix)
    assert "XnnpackBackend" not in build.backends and build.backends
    pte = export_model(parse_model_spec(TINY_CNN)).pte
    result = _run(build, pte)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"etfarm_runner: error: program '{pte}' method 'forward' needs backends it does not register: XnnpackBackend "
        f"(registered: {', '.join(build.backends)}; build the runner against a runtime that has them)"]


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=1200)


def test_runtime_in_the_inventory(full_prefix: Path, tmp_path: Path) -> None:
    """`runtime: PATH` in the inventory: that device's runner is built against the prefix, the other device of the
    same target keeps etfarm's own (builds are keyed by target and runtime), and the manifest says which ran where."""
    own = DeviceSpec("own", "host", str(tmp_path / "own"), runtime=str(full_prefix))
    plain = DeviceSpec("plain", "host", str(tmp_path / "plain"))
    config = write_inventory(tmp_path / "devices.yaml", [own, plain])
    out = tmp_path / "run"
    result = etfarm("run", "--config", str(config), "--devices", "own,plain", "--model", TINY_CNN, "--runs", "1",
                    "--iterations", "2", "--untraced-runs", "0", "--no-report", "--no-store", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    job = load_manifest(out)
    mine, theirs = job.device("own"), job.device("plain")
    assert mine is not None and theirs is not None and mine.runner_key != theirs.runner_key
    runner = mine.facts.runner
    assert runner is not None and theirs.facts.runner is not None
    assert runner.runtime == "user" and runner.executorch_dir == str(full_prefix / "share" / "cmake")
    assert {"XnnpackBackend", "QnnBackend"} <= set(runner.backends or ())  # as the runner said on the device
    assert theirs.facts.runner.runtime == "wheel"
    assert f"runner for host (runtime {full_prefix}): " in result.stderr and "runner for host: " in result.stderr


def test_a_program_needing_an_unregistered_backend_fails_the_device_in_one_line(no_xnnpack_prefix: Path,
                                                                                 tmp_path: Path) -> None:
    device = DeviceSpec("own", "host", str(tmp_path / "own"), runtime=str(no_xnnpack_prefix))
    config = write_inventory(tmp_path / "devices.yaml", [device])
    out = tmp_path / "run"
    result = etfarm("run", "--config", str(config), "--devices", "own", "--model", TINY_CNN, "--runs", "1",
                    "--untraced-runs", "0", "--no-report", "--no-store", "--out", str(out))
    assert result.returncode == 1
    error = load_manifest(out).device("own").error  # type: ignore[union-attr]
    assert error is not None and "\n" not in error, error
    assert "needs backends it does not register: XnnpackBackend (registered: " in error, error
    assert error.startswith("[own] runner (tiny_cnn, run-1): program ")


def test_llama_custom_ops_are_left_to_the_users_own_runtime(full_prefix: Path, llama_ops_pte: Path,
                                                             tmp_path: Path) -> None:
    """A program with llama:: ops is refused before anything runs when a device has etfarm's runtime (which lacks
    them), and let through to devices that all run the user's own, where the runner says in one line what is missing
    (this prefix, the wheel's, does not register them either)."""
    own = DeviceSpec("own", "host", str(tmp_path / "own"), runtime=str(full_prefix))
    plain = DeviceSpec("plain", "host", str(tmp_path / "plain"))
    config = write_inventory(tmp_path / "devices.yaml", [own, plain])
    common = ("--config", str(config), "--model", str(llama_ops_pte), "--runs", "1", "--iterations", "1",
              "--untraced-runs", "0", "--no-report", "--no-store")
    mixed = etfarm("run", "--devices", "own,plain", *common, "--out", str(tmp_path / "mixed"))
    assert mixed.returncode == 2 and "llama::update_cache" in mixed.stderr and not (tmp_path / "mixed").exists()
    out = tmp_path / "own-only"
    result = etfarm("run", "--devices", "own", *common, "--out", str(out))
    assert result.returncode == 1, result.stderr[-3000:]
    error = load_manifest(out).device("own").error  # type: ignore[union-attr]
    assert error is not None and "\n" not in error and "llama::update_cache" in error, error
