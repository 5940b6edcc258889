"""runners/, configs/ and the device-side scripts reach a non-editable install, as package data."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from orchestrator.base import resources

REPO = Path(__file__).resolve().parents[2]
SHIPPED = "orchestrator/shipped/"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build_dir = tmp_path_factory.mktemp("src")
    # Build from a copy so setuptools' build/ and egg-info never land in the checkout.
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "--cached", "--others", "--exclude-standard"],
                           check=True, capture_output=True, text=True).stdout.split()
    for rel in files:
        source = REPO / rel
        if source.is_file():
            target = build_dir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                             str(build_dir)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    (built,) = out.glob("etfarm-*.whl")
    return built


def test_wheel_carries_runner_sources_configs_and_scripts_as_package_data(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in ("runners/CMakeLists.txt", "runners/etfarm_runner.cpp", "runners/toolchains/linux-aarch64.cmake",
                "configs/devices.yaml", "configs/models/tiny_cnn.py"):
        assert SHIPPED + rel in names, rel
    for header in (REPO / "runners").glob("*.h"):
        assert SHIPPED + f"runners/{header.name}" in names
    assert "device_agents/remote/describe.sh" in names
    assert "orchestrator/cli/__init__.py" in names
    assert not [n for n in names if ".data/" in n], "nothing may go through setuptools' deprecated data-files"


def test_resource_dir_finds_installed_layout(wheel: Path, tmp_path: Path) -> None:
    """Install the wheel into a bare directory and ask the installed package, not the checkout."""
    target = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "-q", "--target", str(target),
                              str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr
    probe = ("import orchestrator, orchestrator.base.resources as r\n"
             "print(orchestrator.__file__)\n"
             "print(r.resource_dir('runners'))\nprint(r.resource_dir('configs'))\n")
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    package, runners, configs = result.stdout.split()
    assert Path(package).is_relative_to(target), "the probe must import the installed copy, not the checkout"
    assert Path(runners) == target / "orchestrator" / "shipped" / "runners"
    assert Path(configs) == target / "orchestrator" / "shipped" / "configs"
    assert (Path(runners) / "etfarm_runner.cpp").is_file() and (Path(configs) / "models" / "tiny_mlp.py").is_file()


def test_resource_dir_refuses_a_folder_without_its_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "configs").mkdir()  # an unrelated configs/ folder without devices.yaml is not taken
    monkeypatch.setattr(resources, "_CHECKOUT_ROOT", tmp_path)
    monkeypatch.setattr(resources, "SHIPPED_PACKAGE_DIR", "absent")
    with pytest.raises(Exception, match="no 'configs' directory"):
        resources.resource_dir("configs")


def test_checkout_resources_resolve() -> None:
    assert resources.resource_dir("runners") == REPO / "runners"
    assert resources.resource_dir("configs") == REPO / "configs"
