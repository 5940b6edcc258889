import getpass
import os
import pwd
from pathlib import Path

import pytest

from device_agents.adb.settings import AdbSettings
from device_agents.spec import LocalSettings
from device_agents.ssh.settings import SshSettings
from orchestrator.base.errors import ConfigError, UsageError
from orchestrator.config import default_config_path, load_inventory


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "devices.yaml"
    path.write_text(text)
    return path


def test_tests_never_see_the_real_users_inventory() -> None:
    # tests/conftest.py points HOME and XDG_CONFIG_HOME into a temporary directory.
    assert Path.home() != Path(pwd.getpwuid(os.getuid()).pw_dir) and "pytest" in str(Path.home())
    assert Path(os.environ["XDG_CONFIG_HOME"]).is_relative_to(Path.home())
    assert default_config_path() is None


def test_no_file_gives_builtin_local() -> None:
    inventory = load_inventory(None)
    assert list(inventory.devices) == ["local"]
    assert inventory.devices["local"].transport == "local"


def test_example_inventory_parses() -> None:
    example = Path(__file__).resolve().parents[2] / "configs" / "devices.yaml"
    inventory = load_inventory(example)
    rpi5 = inventory.devices["rpi5"]
    assert rpi5.transport == "ssh" and rpi5.target == "linux-aarch64"
    assert rpi5.exec_prefix == ("taskset", "-c", "2-3")
    assert rpi5.settings == SshSettings(host="192.168.1.50", key="~/.ssh/etfarm_ed25519", port=22, user="pi",
                                        known_hosts="~/.config/etfarm/known_hosts", connect_timeout=15.0)
    assert rpi5.threads == 2 and rpi5.cpus is None
    assert inventory.devices["pixel8"].settings == AdbSettings(serial="39071FDJH000XY", adb_host="127.0.0.1", adb_port=5037)
    assert inventory.devices["local"].settings == LocalSettings()
    assert rpi5.source == str(example)


def test_file_without_local_still_has_local(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n  b:\n    transport: adb\n    serial: X\n    target: android-arm64-v8a\n")
    assert list(load_inventory(path).devices) == ["local", "b"]


def test_file_can_redefine_local(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n  local:\n    transport: local\n    workdir: /tmp/etfarm-x\n    exec_prefix: [nice, -n, '5']\n")
    local = load_inventory(path).devices["local"]
    assert local.workdir == "/tmp/etfarm-x" and local.exec_prefix == ("nice", "-n", "5")


@pytest.mark.parametrize(
    "text, key, problem",
    [
        ("devices: [", "line", "not valid YAML"),
        ("foo: 1\n", "devices", "missing"),
        ("devices: {}\n", "devices", "non-empty mapping"),
        ("devices:\n  a: 3\n", "devices.a", "expected a mapping"),
        ("devices:\n  a:\n    transport: telnet\n", "devices.a.transport", "expected one of"),
        ("devices:\n  a:\n    transport: ssh\n    target: host\n    key: k\n", "devices.a.host", "missing"),
        ("devices:\n  a:\n    transport: ssh\n    target: host\n    host: h\n    key: k\n    port: abc\n", "devices.a.port", "expected an integer"),
        ("devices:\n  a:\n    transport: ssh\n    target: host\n    host: h\n    key: k\n    port: 70000\n", "devices.a.port", "out of range"),
        ("devices:\n  a:\n    transport: adb\n    serial: s\n    target: ios\n", "devices.a.target", "expected one of"),
        ("devices:\n  a:\n    transport: adb\n    serial: s\n    target: host\n    sereal: t\n", "devices.a.sereal", "unknown key"),
        ("devices:\n  a:\n    transport: local\n    workdir: relative/dir\n", "devices.a.workdir", "absolute path"),
        ("devices:\n  a:\n    transport: local\n    exec_prefix: 5\n", "devices.a.exec_prefix", "string or a list"),
        ("devices:\n  'bad name':\n    transport: local\n", "devices.bad name", "device names"),
        ("devices:\n  a:\n    transport: local\nextra: 1\n", "extra", "unknown top-level key"),
    ],
)
def test_config_errors_name_file_and_key(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_inventory(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}")
    assert problem in message
    assert "\n" not in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_inventory(tmp_path / "nope.yaml")


def test_a_path_that_is_no_file_is_named_as_what_it_is(tmp_path: Path) -> None:
    """Issue 31: an inventory path that is a directory was called 'no such file'; a pipe is refused unread."""
    pipe = tmp_path / "pipe.yaml"
    os.mkfifo(pipe)
    for path, problem in ((tmp_path, "is a directory, not a file"), (pipe, "not a regular file (a pipe or a device)")):
        with pytest.raises(ConfigError) as info:
            load_inventory(path)
        assert str(info.value) == f"{path}: {problem}"


def test_env_var_selects_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "devices:\n  mine:\n    transport: local\n")
    monkeypatch.setenv("ETFARM_CONFIG", str(path))
    assert "mine" in load_inventory().devices


def test_select_keeps_order_and_rejects_unknown() -> None:
    inventory = load_inventory(None)
    assert [d.name for d in inventory.select("local, local")] == ["local"]
    with pytest.raises(UsageError, match="unknown device 'pixel9'"):
        inventory.select("local,pixel9")
    with pytest.raises(UsageError, match="no devices"):
        inventory.select(" , ")


def test_duplicate_keys_are_an_error_naming_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n  rpi5:\n    transport: local\n  rpi5:\n    transport: local\n")
    with pytest.raises(ConfigError) as err:
        load_inventory(path)
    assert str(err.value) == f"{path}: line 4: duplicate key rpi5 (first at line 2)"
    nested = write(tmp_path, "devices:\n  a:\n    transport: ssh\n    host: x\n    key: k\n    host: y\n")
    with pytest.raises(ConfigError, match="line 6: duplicate key host \\(first at line 4\\)"):
        load_inventory(nested)


def test_alias_bombs_are_refused_before_they_expand(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 12)]
    path = write(tmp_path, "\n".join(lines) + "\ndevices: {local: {transport: local}}\n")
    with pytest.raises(ConfigError, match="more than 100 aliases"):
        load_inventory(path)


def test_non_utf8_and_huge_values_give_short_clear_errors(tmp_path: Path) -> None:
    path = tmp_path / "devices.yaml"
    path.write_bytes(b"devices:\n  pi:\n    transport: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_inventory(path)
    huge = write(tmp_path, "devices:\n  pi:\n    transport: ssh\n    target: host\n    host: h\n    key: k\n    port: '" + "9" * 100_000 + "'\n")
    with pytest.raises(ConfigError) as err:
        load_inventory(huge)
    assert "expected an integer, got str '999" in str(err.value) and len(str(err.value)) < 300
@pytest.mark.parametrize(("value", "expected"), [("2", "2"), (3, "3"), ("0-3", "0-3"), ("0, 2,4-7", "0,2,4-7"),
                                               ("big", "big"), ("prime", "prime")])
def test_cpus_key_is_a_cpu_list(tmp_path: Path, value: object, expected: str) -> None:
    text = value if isinstance(value, int) else f'"{value}"'
    path = write(tmp_path, f"devices:\n  b:\n    transport: local\n    cpus: {text}\n")
    assert load_inventory(path).devices["b"].cpus == expected


@pytest.mark.parametrize("value", ['"0-"', '"a"', '"1;rm -rf /"', "[1, 2]", "true", "little"])
def test_bad_cpus_name_the_key(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, f"devices:\n  b:\n    transport: local\n    cpus: {value}\n")
    with pytest.raises(ConfigError, match=r"devices\.b\.cpus.*cpu list"):
        load_inventory(path)


def test_default_ssh_workdir_is_per_user_and_per_device(tmp_path: Path) -> None:
    text = ("devices:\n  a:\n    transport: ssh\n    target: host\n    host: h\n    key: /k\n    user: alice\n"
            "  b:\n    transport: ssh\n    target: host\n    host: h\n    key: /k\n")
    devices = load_inventory(write(tmp_path, text)).devices
    assert devices["a"].workdir == "/tmp/etfarm-alice/a"
    assert devices["b"].workdir == f"/tmp/etfarm-{getpass.getuser()}/b"


def test_runtime_is_a_prefix_path_relative_to_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n  a:\n    transport: local\n    runtime: et-install\n"
                           "  b:\n    transport: local\n    runtime: ~/et\n  c:\n    transport: local\n")
    devices = load_inventory(path).devices
    assert devices["a"].runtime == str((tmp_path / "et-install").resolve())
    assert devices["b"].runtime == str(Path.home() / "et") and devices["c"].runtime is None
    assert devices["a"].inventory_entry()["runtime"] == devices["a"].runtime  # written back as read
    with pytest.raises(ConfigError, match=r"devices\.a\.runtime: expected the path"):
        load_inventory(write(tmp_path, "devices:\n  a:\n    transport: local\n    runtime: ''\n"))


def test_adb_serial_is_a_device_without_an_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator import config

    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "5999")
    monkeypatch.setattr(config, "device_abi", lambda server, serial: {"R58M": "arm64-v8a", "OLD": "armeabi-v7a"}[serial])
    inventory = load_inventory(None)
    phone, local = inventory.select("adb:R58M,local")
    assert (phone.name, phone.transport, phone.target, phone.workdir) == ("adb:R58M", "adb", "android-arm64-v8a",
                                                                          "/data/local/tmp/etfarm")
    assert phone.settings == AdbSettings(serial="R58M", adb_host="127.0.0.1", adb_port=5999) and local.name == "local"
    with pytest.raises(UsageError, match=r"adb:OLD: the device's ABI is armeabi-v7a .* run on arm64-v8a only"):
        inventory.select("adb:OLD")
    with pytest.raises(UsageError, match="give the device's serial"):
        inventory.select("adb:")


def test_the_default_adb_server_is_adbs_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from device_agents.adb.discover import default_server

    for name in ("ADB_SERVER_SOCKET", "ANDROID_ADB_SERVER_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert default_server() == ("127.0.0.1", 5037)
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "5038")
    assert default_server() == ("127.0.0.1", 5038)
    monkeypatch.setenv("ADB_SERVER_SOCKET", "tcp:10.0.0.2:5039")
    assert default_server() == ("10.0.0.2", 5039)


def test_description_is_one_line_shown_by_devices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from orchestrator.cli import main

    path = write(tmp_path, "devices:\n  a:\n    transport: local\n    description: Pixel 8 on the shelf, USB hub 2\n"
                           "  b:\n    transport: local\n")
    devices = load_inventory(path).devices
    assert devices["a"].description == "Pixel 8 on the shelf, USB hub 2" and devices["b"].description == ""
    assert devices["a"].inventory_entry()["description"] == devices["a"].description
    assert main(["devices", "--no-check", "--config", str(path)]) == 0
    header, _, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:2] == ["device", "description"]
    assert [r for r in rows if r.startswith("a ")] == [next(r for r in rows if "Pixel 8 on the shelf, USB hub 2" in r)]
    with pytest.raises(ConfigError, match=r"devices\.a\.description: expected one line"):
        load_inventory(write(tmp_path, "devices:\n  a:\n    transport: local\n    description: \"x\\ny\"\n"))


@pytest.mark.parametrize(("name", "plain"), [
    ("pixel8", True), ("adb:127.0.0.1:5555", True), ("adb:emulator-5554", True), ("a:b", False),
    ("adb:", False), ("adb:../x", False), ("adb::5555", False), ("../x", False), ("x" * 101, False),
])
def test_plain_names_allow_adb_serials_and_no_paths(name: str, plain: bool) -> None:
    from orchestrator.base.names import is_plain_name

    assert is_plain_name(name) is plain


def test_adb_serial_that_is_no_serial_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"--devices adb:\.\./x: not an adb serial"):
        load_inventory(None).select("adb:../x")
