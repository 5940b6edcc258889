"""runners/, configs/ and the device-side scripts reach a non-editable install."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from orchestrator import resources

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
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
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(build_dir)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    (wheel,) = out.glob("etfarm-*.whl")
    return set(zipfile.ZipFile(wheel).namelist())


def test_wheel_carries_runner_sources_configs_and_scripts(wheel_names: set[str]) -> None:
    data = "etfarm-0.1.0.data/data/share/etfarm/"
    for rel in ("runners/CMakeLists.txt", "runners/etfarm_runner.cpp", "runners/toolchains/linux-aarch64.cmake",
                "configs/devices.yaml", "configs/models/tiny_cnn.py"):
        assert data + rel in wheel_names, rel
    for header in (REPO / "runners").glob("*.h"):
        assert data + f"runners/{header.name}" in wheel_names
    assert "device_agents/remote/describe.sh" in wheel_names
    assert "orchestrator/cli/__init__.py" in wheel_names


def test_resource_dir_finds_installed_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    share = tmp_path / "prefix" / "share" / "etfarm"
    (share / "runners").mkdir(parents=True)
    (share / "runners" / "CMakeLists.txt").write_text("")
    # An unrelated configs/ folder without the marker file is not taken.
    (tmp_path / "site" / "configs").mkdir(parents=True)
    monkeypatch.setattr(resources, "_CHECKOUT_ROOT", tmp_path / "site")
    monkeypatch.setattr(resources, "_candidates", lambda: [tmp_path / "site", share])
    assert resources.resource_dir("runners") == share / "runners"
    with pytest.raises(Exception, match="no 'configs' directory"):
        resources.resource_dir("configs")


def test_checkout_resources_resolve() -> None:
    assert resources.resource_dir("runners") == REPO / "runners"
    assert resources.resource_dir("configs") == REPO / "configs"
