"""Typed transport settings: parsed once from the inventory, owned by their transport, asked by name nowhere else.

- each transport's keys parse into its frozen settings type, with its defaults, and a spec written back
  as an inventory entry parses to an equal spec;
- what code outside device_agents/ needs (the address, the worker's presence check, Android, the default
  workdir, trusting a host key) comes from the settings, never from comparing the transport's name:
  an AST check over orchestrator/ enforces it;
- reading an inventory never imports paramiko or adbutils; only using a device of that transport does.
"""

from __future__ import annotations

import ast
import dataclasses
import getpass
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from device_agents import TRANSPORTS, DeviceSpec, settings_type, trust_host_key
from device_agents.adb.settings import AdbSettings
from device_agents.adb.track import AdbListing
from device_agents.presence import AlwaysPresent, ServerBanner
from device_agents.spec import LocalSettings
from device_agents.ssh.settings import SshSettings
from orchestrator.base.errors import ConfigError, DeviceRefused, UsageError
from orchestrator.config import load_inventory

ROOT = Path(__file__).resolve().parents[3]
# The only places that may branch on a transport's name: the registry and its transports, and the parser.
ALLOWED = (ROOT / "device_agents", ROOT / "orchestrator" / "config.py")

INVENTORY = """\
devices:
  board:
    transport: ssh
    target: linux-aarch64
    host: 10.0.0.5
    key: ~/.ssh/id
    threads: 2
    cpus: "2-3"
    exec_prefix: "nice -n 5"
  plain:
    transport: ssh
    target: host
    host: h
    key: /k
    user: alice
    port: 2222
    known_hosts: /etc/etfarm/known_hosts
    connect_timeout: 4
  phone:
    transport: adb
    target: android-arm64-v8a
    serial: 127.0.0.1:5555
    adb_port: 5038
  mine:
    transport: local
    workdir: ~/etfarm-work
"""


@pytest.fixture
def inventory(tmp_path: Path) -> dict[str, DeviceSpec]:
    path = tmp_path / "devices.yaml"
    path.write_text(INVENTORY)
    return dict(load_inventory(path).devices)


def test_each_transport_parses_into_its_own_frozen_settings_with_its_defaults(inventory: dict[str, DeviceSpec]) -> None:
    board, plain, phone, mine = (inventory[n] for n in ("board", "plain", "phone", "mine"))
    assert board.settings == SshSettings(host="10.0.0.5", key="~/.ssh/id", port=22, user=None,
                                         known_hosts="~/.config/etfarm/known_hosts", connect_timeout=15.0)
    assert plain.settings == SshSettings("h", "/k", 2222, "alice", "/etc/etfarm/known_hosts", 4.0)
    assert phone.settings == AdbSettings("127.0.0.1:5555", "127.0.0.1", 5038)
    assert mine.settings == LocalSettings()
    assert (board.threads, board.cpus, board.exec_prefix) == (2, "2-3", ("nice", "-n", "5"))
    assert (phone.threads, phone.cpus) == (0, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        board.settings.port = 2  # type: ignore[misc]
    # Each transport's own default workdir; the host's devices expand `~`.
    assert board.workdir == f"/tmp/etfarm-{getpass.getuser()}/board" and plain.workdir == "/tmp/etfarm-alice/plain"
    assert phone.workdir == "/data/local/tmp/etfarm"
    assert mine.workdir == str(Path.home() / "etfarm-work")


def test_what_the_rest_of_etfarm_asks_comes_from_the_settings(inventory: dict[str, DeviceSpec]) -> None:
    board, plain, phone, mine = (inventory[n] for n in ("board", "plain", "phone", "mine"))
    assert [s.settings.address for s in (board, plain, phone, mine)] == [
        "10.0.0.5:22", "alice@h:2222", "127.0.0.1:5555 via adb 127.0.0.1:5038", "this host"]
    assert board.settings.presence == ServerBanner("10.0.0.5", 22, b"SSH-")
    assert phone.settings.presence == AdbListing(("127.0.0.1", 5038), "127.0.0.1:5555")
    assert mine.settings.presence == AlwaysPresent()
    assert [s.android for s in (board, plain, phone, mine)] == [False, False, True, False]
    assert dataclasses.replace(board, target="android-arm64-v8a").android  # an Android target on any transport
    assert plain.settings.known_hosts_name == "[h]:2222" and board.settings.known_hosts_name == "10.0.0.5"  # type: ignore[attr-defined]


def test_a_spec_written_back_as_an_inventory_entry_parses_to_the_same_spec(inventory: dict[str, DeviceSpec],
                                                                         tmp_path: Path) -> None:
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump({"devices": {name: spec.inventory_entry() for name, spec in inventory.items()}}))
    reread = load_inventory(again).devices
    for name, spec in inventory.items():
        assert reread[name] == dataclasses.replace(spec, source=str(again)), name


@pytest.mark.parametrize(("transport", "lines", "key", "problem"), [
    ("ssh", "key: k\n", "host", "missing (required)"),
    ("ssh", "host: h\nkey: k\nport: abc\n", "port", "expected an integer, got str 'abc'"),
    ("ssh", "host: h\nkey: k\nport: 0\n", "port", "port out of range: 0"),
    ("ssh", "host: h\nkey: k\nuser: 5\n", "user", "expected a string, got int 5"),
    ("ssh", "host: h\nkey: k\nconnect_timeout: 0\n", "connect_timeout", "expected a number of seconds > 0, got int 0"),
    ("ssh", "host: h\nkey: k\nconnect_timeout: soon\n", "connect_timeout", "expected a number, got str 'soon'"),
    ("ssh", "host: h\nkey: k\nserial: s\n", "serial", "unknown key for a ssh device"),
    ("adb", "adb_port: 5037\n", "serial", "missing (required)"),
    ("adb", "serial: s\nadb_port: true\n", "adb_port", "expected an integer, got bool True"),
    ("adb", "serial: s\nadb_port: 99999\n", "adb_port", "port out of range: 99999"),
    ("adb", "serial: s\nhost: h\n", "host", "unknown key for a adb device"),
    ("local", "threads: many\n", "threads", "expected an integer, got str 'many'"),
    ("local", "key: k\n", "key", "unknown key for a local device"),
])
def test_errors_name_the_file_and_the_key(tmp_path: Path, transport: str, lines: str, key: str, problem: str) -> None:
    path = tmp_path / "devices.yaml"
    body = "".join(f"    {line}\n" for line in lines.splitlines())
    path.write_text(f"devices:\n  d:\n    transport: {transport}\n    target: host\n{body}")
    with pytest.raises(ConfigError) as err:
        load_inventory(path)
    assert str(err.value) == f"{path}: devices.d.{key}: {problem}"


def test_a_transport_that_is_not_a_name_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "devices.yaml"
    path.write_text("devices:\n  d:\n    transport: [ssh]\n")
    with pytest.raises(ConfigError, match=r"devices\.d\.transport: expected one of local, ssh, adb, got list"):
        load_inventory(path)


def test_the_registry_names_every_transport_and_its_settings() -> None:
    assert list(TRANSPORTS) == ["local", "ssh", "adb"]
    assert [settings_type(name) for name in TRANSPORTS] == [LocalSettings, SshSettings, AdbSettings]


def test_a_specs_transport_is_its_settings_own_and_never_a_second_word() -> None:
    assert [settings_type(name).TRANSPORT for name in TRANSPORTS] == list(TRANSPORTS)
    assert DeviceSpec("p", "host", "/w", settings=AdbSettings("s")).transport == "adb"
    assert DeviceSpec("l", "host", "/w").transport == "local"  # no settings: the host itself
    with pytest.raises(TypeError):  # nothing to disagree with the settings
        DeviceSpec("p", transport="ssh", target="host", workdir="/w", settings=AdbSettings("s"))  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="the transport is not an argument"):  # nor as a word in its place
        DeviceSpec("p", "local", "host", "/w")


def test_only_transports_with_host_keys_can_trust_one() -> None:
    for spec in (DeviceSpec("here", "host", "/w"), DeviceSpec("p", "host", "/w", settings=AdbSettings("s"))):
        with pytest.raises(UsageError, match=f"device '{spec.name}' uses {spec.transport}; only ssh devices have host keys"):
            trust_host_key(spec)
    with pytest.raises(DeviceRefused, match="ssh setting 'host' is missing"):  # an ssh spec without a host
        trust_host_key(DeviceSpec("bare", "host", "/w", settings=SshSettings("", key="k")))


def _transport_name_comparisons(path: Path, root: Path = ROOT) -> list[str]:
    """Comparisons (==, !=, in, match) that involve a transport name or a `.transport` attribute."""
    names = set(TRANSPORTS)
    found: list[str] = []

    def mentions(node: ast.AST) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Constant) and sub.value in names:
                return True
            if isinstance(sub, ast.Attribute) and sub.attr == "transport":
                return True
            if isinstance(sub, ast.Name) and sub.id == "transport":
                return True
        return False

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Compare) and mentions(node):
            found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Match) and mentions(node.subject):
            found.append(f"{path.relative_to(root)}:{node.lineno}: match {ast.unparse(node.subject)}")
        elif isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value in names for k in node.keys):
            found.append(f"{path.relative_to(root)}:{node.lineno}: a mapping keyed by transport names")
    return found


def test_nothing_outside_device_agents_and_the_parser_compares_a_transport_name() -> None:
    sources = [p for p in sorted((ROOT / "orchestrator").rglob("*.py")) if not p.is_relative_to(ALLOWED[1])]
    assert len(sources) > 50
    found = [hit for path in sources for hit in _transport_name_comparisons(path)]
    assert found == [], "ask the device's settings (device_agents/spec.py) instead:\n" + "\n".join(found)


def test_the_check_sees_the_comparisons_it_forbids(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        'def f(spec, t):\n'
        '    if spec.transport == "ssh": pass\n'
        '    if t in ("adb", "x"): pass\n'
        '    match spec.transport:\n'
        '        case _: pass\n'
        '    return {"local": 1}\n')
    assert len(_transport_name_comparisons(tmp_path / "bad.py", tmp_path)) == 4


def _imported_after(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(sorted({{m.split('.')[0] for m in sys.modules}} & {{'paramiko', 'adbutils'}}))\n"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return set(eval(result.stdout.strip().splitlines()[-1]))


def test_reading_an_inventory_never_imports_a_transport_library(tmp_path: Path) -> None:
    path = tmp_path / "devices.yaml"
    path.write_text(INVENTORY)
    local_only = tmp_path / "local.yaml"
    local_only.write_text("devices:\n  here: {transport: local, workdir: " + str(tmp_path / "w") + "}\n")
    from_cli = "from orchestrator.cli import main\nassert main({argv}) == 0\n"
    assert _imported_after(from_cli.format(argv=["devices", "--no-check", "--config", str(path)])) == set()
    # `etfarm devices` on a local-only inventory connects to its device without either library.
    assert _imported_after(from_cli.format(argv=["devices", "--config", str(local_only)])) == set()
    assert _imported_after("from device_agents.ssh import SSHAgent") == {"paramiko"}
    assert _imported_after("from device_agents.adb import AdbAgent") == {"adbutils"}
