"""Suite-wide settings: an isolated etfarm cache and an isolated HOME (the CI rule for missing
tools is in tests/helpers/tools.py).

No test may read the user's real ~/.config/etfarm/devices.yaml, ~/.local/share/etfarm or
~/.cache/etfarm: HOME and the XDG base directories point into a temporary directory for the
whole session (subprocesses inherit them), and ETFARM_CONFIG / ETFARM_STORE are unset.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from orchestrator.base.collector import collect_less_often

XDG_DIRS = {"XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache", "XDG_DATA_HOME": ".local/share",
            "XDG_STATE_HOME": ".local/state"}


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C and hangup tests send real SIGINTs and SIGHUPs to `etfarm` child processes. A shell script's
    background job starts with SIGINT ignored, `nohup` with SIGHUP ignored, and an ignored signal stays ignored
    across exec, so `etfarm` would rightly keep ignoring it: give the test process a handler for SIGINT (which
    exec resets to the default in every child) and SIGHUP its default."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    collect_less_often()  # test processes import torch and export in-process too: the `etfarm` program's setting



# The longest modules (wall time per module in a clean clone's `make test`, 2026-11-28), longest first, except that the
# modules that mostly wait (deadlines, killed and frozen peers: test_faults, test_transport_faults,
# test_interrupt_resume, test_farm_hardening, test_device_lock; under 35 % CPU) are spread among the ones that keep a
# core busy: four of them first left the two cores 50-85 % idle for the suite's first two minutes. `--dist loadscope`
# hands modules to workers in collection order (the Makefile turns off xdist's own reordering, which puts the modules
# with the most tests first and so left three nightly modules running alone for the last 65 s): a long module
# collected last would run alone at the end while the other workers idle; put first, they overlap everything else,
# and the short ones fill the gaps. Only the order changes: any module may be missing here.
LONG_MODULES = (
    "integration/test_faults.py",
    "integration/test_farm.py",
    "integration/test_recipes.py",
    "integration/test_energy.py",
    "integration/test_transport_faults.py",
    "integration/verdicts/test_llm_verdicts.py",
    "integration/test_zoo.py",
    "integration/verdicts/test_nightly.py",
    "integration/test_interrupt_resume.py",
    "integration/test_numerics.py",
    "integration/test_cli_errors.py",
    "integration/test_environment_errors.py",
    "integration/test_farm_hardening.py",
    "integration/verdicts/test_nightly_recipes.py",
    "integration/test_llm_jobs.py",
    "integration/test_bisect.py",
    "integration/test_device_lock.py",
    "integration/test_android_run.py",
    "integration/test_op_naming.py",
    "integration/verdicts/test_nightly_bisect.py",
    "integration/verdicts/test_verdict_behaviour.py",
    "integration/test_honest_exits.py",
    "integration/test_model_code_guard.py",
    "integration/verdicts/test_compare_says_what_it_compares.py",
    "integration/test_run_local.py",
    "integration/test_kernel_pages.py",
    "integration/test_kernel_map.py",
    "unit/cli/test_conventions.py",
    "integration/test_report.py",
    "integration/test_runloop.py",
    "integration/test_emulate.py",
    "integration/test_llm_runner.py",
    "integration/test_publish_target.py",
    "integration/test_fleet.py",
    "integration/test_reads_once.py",
    "integration/test_user_runtime.py",
    "integration/test_export_lock.py",
    "integration/verdicts/test_noise_floor.py",
    "integration/test_devices_cli.py",
    "integration/test_runner.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {module: k for k, module in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0].removeprefix("tests/"), len(rank)))

@pytest.fixture(scope="session", autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    os.environ["HOME"] = str(home)
    for variable, rel in XDG_DIRS.items():
        (home / rel).mkdir(parents=True, exist_ok=True)
        os.environ[variable] = str(home / rel)
    for variable in ("ETFARM_CONFIG", "ETFARM_STORE", "ETFARM_SCHEDULER"):
        os.environ.pop(variable, None)
    return home


# What a cache holds that is the same for every test process: content-addressed and published atomically
# (orchestrator/base/cache.py publish_dir), so parallel workers can share them and export or build each thing once.
SHARED_CACHE_ENTRIES = ("exports", "builds", "runtimes")


@pytest.fixture(scope="session", autouse=True)
def etfarm_cache(isolated_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All tests of a process share one cache (exports and runner builds are slow) that never touches ~/.cache.

    Under pytest-xdist each worker has a cache of its own (its devices' workdirs and locks are its own), whose
    exports, builds and runtimes are links to one folder all workers share. Set ETFARM_TEST_CACHE_DIR to keep
    that shared part between local test runs.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    kept = os.environ.get("ETFARM_TEST_CACHE_DIR")
    if worker is None:
        path = Path(kept) if kept else tmp_path_factory.mktemp("etfarm-cache")
    else:
        shared = Path(kept) if kept else tmp_path_factory.getbasetemp().parent / "etfarm-shared-cache"
        path = tmp_path_factory.mktemp("etfarm-cache")
        for entry in SHARED_CACHE_ENTRIES:
            (shared / entry).mkdir(parents=True, exist_ok=True)
            (path / entry).symlink_to(shared / entry, target_is_directory=True)
    os.environ["ETFARM_CACHE_DIR"] = str(path)
    return path


@pytest.fixture(scope="session", autouse=True)
def etfarm_store_home(isolated_home: Path) -> Path:
    """`etfarm run` records into the default store: in tests that is the isolated HOME's, never ~/.local/share."""
    return Path(os.environ["XDG_DATA_HOME"]) / "etfarm" / "results.db"
