"""`etfarm devices`, `devices check` and `devices trust` against the real testbed peers."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from device_agents import DeviceSpec
from orchestrator.emulate.sshd import SshTestHost
from tests.helpers.inventory import with_workdir, write_inventory
from tests.integration.testbed.delayproxy import DelayProxy


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=120)


def test_devices_lists_reachability_and_facts(ssh_device: DeviceSpec, adb_device: DeviceSpec,
                                              unknown_key_ssh_device: DeviceSpec, tmp_path: Path) -> None:
    refused_device = with_workdir(unknown_key_ssh_device, tmp_path / "refused-workdir")
    config = write_inventory(tmp_path / "devices.yaml", [ssh_device, adb_device, refused_device])
    result = etfarm("devices", "--json", "--config", str(config))
    assert result.returncode == 0, result.stderr
    listing = json.loads(result.stdout)
    entries = {e["name"]: e for e in listing["devices"]}
    assert set(entries) == {"local", "sshdev", "adbdev", "unknown-key"}
    for name in ("local", "sshdev", "adbdev"):
        assert entries[name]["reachable"] is True, entries[name]
        assert entries[name]["health"] == "ok" and entries[name]["attempts"] == [], entries[name]
        assert entries[name]["facts"]["cores"] >= 1
    refused = entries["unknown-key"]
    assert refused["reachable"] is False and "unknown" in refused["error"] and "etfarm devices trust" in refused["error"]
    # A refusal is not retried: one try, offline.
    assert refused["health"] == "offline" and len(refused["attempts"]) == 1, refused
    # Nothing was created on the refused device.
    assert not Path(refused_device.workdir).exists()

    table = etfarm("devices", "--config", str(config))
    assert table.returncode == 0
    assert "offline: " in table.stdout and "adbdev" in table.stdout and "sshdev" in table.stdout
    # The whole reason and its fix on a line of its own, never cut at the table's width.
    hint = next(line for line in table.stdout.splitlines() if line.startswith("unknown-key: "))
    assert "etfarm devices trust unknown-key" in hint and hint.endswith(refused["error"].splitlines()[-1].strip())


def test_trust_then_check(unknown_key_ssh_device: DeviceSpec, tmp_path: Path) -> None:
    config = write_inventory(tmp_path / "devices.yaml", [unknown_key_ssh_device])
    before = etfarm("devices", "check", "unknown-key", "--config", str(config), "--json")
    assert before.returncode == 1 and json.loads(before.stdout)["reachable"] is False

    trusted = etfarm("devices", "trust", "unknown-key", "--config", str(config))
    assert trusted.returncode == 0, trusted.stderr
    assert "SHA256:" in trusted.stdout
    assert f"-> {unknown_key_ssh_device.settings.known_hosts}" in trusted.stdout  # type: ignore[attr-defined]
    assert Path(unknown_key_ssh_device.settings.known_hosts).is_file()  # type: ignore[attr-defined]

    after = etfarm("devices", "check", "unknown-key", "--config", str(config), "--json")
    assert after.returncode == 0, after.stdout + after.stderr
    assert json.loads(after.stdout)["reachable"] is True


def test_trust_refuses_non_ssh_devices() -> None:
    result = etfarm("devices", "trust", "local")
    assert result.returncode == 2 and "only ssh devices" in result.stderr


def test_devices_health_degraded_after_retried_connection_resets(sshd_host: SshTestHost, tmp_path: Path) -> None:
    # The link resets the first two connections; the third gets through: answered after retries.
    with DelayProxy(target_port=sshd_host.port, one_way_s=0.0, drop_first=2) as proxy:
        spec = sshd_host.spec("flaky", tmp_path / "wd", port=proxy.port,
                              known_hosts=tmp_path / "known_hosts")
        Path(spec.settings.known_hosts).write_text(  # type: ignore[attr-defined]
            f"[127.0.0.1]:{proxy.port} {sshd_host.host_key_line}\n")
        config = write_inventory(tmp_path / "devices.yaml", [spec])
        listing = json.loads(etfarm("devices", "--json", "--config", str(config)).stdout)
        proxy.drop_first = 2
        table = etfarm("devices", "--config", str(config)).stdout
    flaky = next(e for e in listing["devices"] if e["name"] == "flaky")
    assert flaky["reachable"] is True and flaky["health"] == "degraded", flaky
    assert len(flaky["attempts"]) == 2 and all(a["step"] == "connect and describe" for a in flaky["attempts"])
    assert "flaky" in table and "degraded (2 failed tries" in table, table


def test_devices_check_prints_text_and_json_only_with_json(tmp_path: Path) -> None:
    config = tmp_path / "devices.yaml"
    config.write_text(f"devices:\n  box:\n    transport: local\n    workdir: {tmp_path / 'box'}\n")
    text = etfarm("devices", "check", "box", "--config", str(config))
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("box (local, host, ") and ": ok" in text.stdout and "{" not in text.stdout
    as_json = etfarm("devices", "check", "box", "--config", str(config), "--json")
    assert json.loads(as_json.stdout)["reachable"] is True


def test_emulated_board_reports_its_own_machine_not_the_hosts(rpi5_device: DeviceSpec, tmp_path: Path) -> None:
    """describe.sh runs on the emulating host (x86_64 here); the board's abi is read through its qemu prefix."""
    config = write_inventory(tmp_path / "devices.yaml", [replace(rpi5_device, emulated=True)])
    listing = etfarm("devices", "--json", "--config", str(config))
    assert listing.returncode == 0, listing.stderr
    board = next(e for e in json.loads(listing.stdout)["devices"] if e["name"] == "rpi5")
    assert board["facts"]["abi"] == "aarch64" != platform.machine(), board
    table = etfarm("devices", "--config", str(config))
    row = next(line for line in table.stdout.splitlines() if line.startswith("rpi5"))
    assert "aarch64" in row and platform.machine() not in row, table.stdout
