"""CLI conventions (docs/reference/conventions.md): one `error:` line, exit codes, -h, --version,
bare `etfarm`, choices and environment variables in --help, completion, --name per --model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.base.errors import CommandFailed, ModelSpecError
from orchestrator.cli import devices as devices_command
from orchestrator.cli import main


def etfarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


def test_multi_line_errors_print_exactly_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def failing(path: object = None) -> None:
        raise CommandFailed("rpi5", "cat /proc/cpuinfo", 1, "line one of the output\nline two\n\nline four")

    monkeypatch.setattr(devices_command, "load_inventory", failing)
    assert main(["devices", "--no-check"]) == 1  # an infrastructure error
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: [rpi5] command exited 1: cat /proc/cpuinfo | line one")
    assert "line four" in err


def test_multi_line_usage_error_is_one_line_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def failing(path: object = None) -> None:
        raise ModelSpecError("factory build() raised RuntimeError: first\nsecond\nthird")

    monkeypatch.setattr(devices_command, "load_inventory", failing)
    assert main(["devices"]) == 2
    assert capsys.readouterr().err.splitlines() == ["error: factory build() raised RuntimeError: first | second | third"]


def test_unexpected_exception_is_one_line_bug_with_details_file(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    def failing(path: object = None) -> None:
        raise ValueError("oops\nmore")

    monkeypatch.setattr(devices_command, "load_inventory", failing)
    assert main(["devices"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: internal error (bug): ValueError: oops | more; details in ")
    details = Path(line.rsplit("details in ", 1)[1])
    assert "Traceback" in details.read_text() and "ValueError: oops" in details.read_text()


def test_ctrl_c_exits_130(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def interrupted(path: object = None) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(devices_command, "load_inventory", interrupted)
    assert main(["devices"]) == 130
    assert "interrupted" in capsys.readouterr().err


def test_bad_option_value_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--model", "m.py:build", "--backend", "tpu"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and "'tpu'" in line and "xnnpack" in line and "etfarm run --help" in line


def test_bare_etfarm_prints_usage_once() -> None:
    result = etfarm()
    assert result.returncode == 0
    assert result.stdout.count("Usage: etfarm") == 1, result.stdout


def test_short_help_equals_long_help() -> None:
    short, long = etfarm("-h"), etfarm("--help")
    assert short.returncode == long.returncode == 0
    assert short.stdout == long.stdout and "Commands" in short.stdout
    assert etfarm("run", "-h").stdout == etfarm("run", "--help").stdout


def test_version_reads_metadata_without_importing_torch() -> None:
    probe = ("import sys\nfrom orchestrator.cli import main\nassert main(['--version']) == 0\n"
             "print('HEAVY', sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'executorch')))\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    from importlib.metadata import version

    assert f"etfarm 0.1.0 (executorch {version('executorch')}, torch {version('torch')})" in result.stdout
    assert "HEAVY []" in result.stdout


def test_help_lists_choices_and_environment() -> None:
    top = etfarm("--help").stdout
    for variable in ("ETFARM_CONFIG", "ETFARM_CACHE_DIR", "ETFARM_STORE", "ETFARM_SCHEDULER"):
        assert variable in top
    assert "--version" in top and "--verbose" in top and "--install-completion" in top
    run_help = etfarm("run", "--help", env={"COLUMNS": "200"}).stdout
    assert "xnnpack|portable" in run_help and "ETFARM_CONFIG" in run_help and "--json" in run_help
    assert "host|linux-aarch64|android-arm64-v8a" in etfarm("build", "--help", env={"COLUMNS": "200"}).stdout
    for command in ("analyze", "devices", "export"):
        assert "--json" in etfarm(command, "--help").stdout, command


def test_help_at_80_columns_cuts_no_word() -> None:
    """A word longer than the help column (a path, `package.module:factory`) folds onto the next line, never `…`."""
    for command in ("run", "compare", "bisect"):
        text = etfarm(command, "--help", env={"COLUMNS": "80", "TERMINAL_WIDTH": ""}).stdout
        assert max(map(len, text.splitlines())) <= 80 and "…" not in text, (command, text)
    glued = "".join(etfarm("run", "--help", env={"COLUMNS": "80"}).stdout.replace("│", "").split())
    for word in ("package.module:factory", "~/.config/etfarm/devices.yaml", "$XDG_DATA_HOME/etfarm/results.db"):
        assert word in glued, word  # folded, whole


def test_shell_completion_completes_commands() -> None:
    result = etfarm(env={"_ETFARM_COMPLETE": "complete_bash", "COMP_WORDS": "etfarm ru", "COMP_CWORD": "1"})
    assert result.returncode == 0
    assert "run" in result.stdout.split()


def test_name_count_must_match_models(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    model = tmp_path / "m.py"
    model.write_text("def a():\n    pass\n")
    code = main(["run", "--model", f"{model}:a", "--model", f"{model}:b", "--name", "only-one", "--out", str(tmp_path / "r")])
    assert code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "--name given 1 time(s) for 2 --model(s)" in line
    assert not (tmp_path / "r").exists()


def test_same_name_twice_is_a_usage_error_before_anything_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    for folder in ("x", "y"):
        (tmp_path / folder / "net.py").write_text("def build():\n    pass\n")
    code = main(["run", "--model", f"{tmp_path / 'x' / 'net.py'}:build", "--model", f"{tmp_path / 'y' / 'net.py'}:build",
                 "--out", str(tmp_path / "r")])
    assert code == 2
    assert "model names must be unique in a job: 'net'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_verbose_shows_device_commands_and_only_with_v(tmp_path: Path) -> None:
    config = tmp_path / "devices.yaml"
    config.write_text(f"devices:\n  box:\n    transport: local\n    workdir: {tmp_path / 'box'}\n")
    quiet = etfarm("devices", "check", "box", "--config", str(config))
    loud = etfarm("-v", "devices", "check", "box", "--config", str(config))
    assert quiet.returncode == loud.returncode == 0, loud.stderr
    assert "DEBUG" not in quiet.stderr
    commands = [line for line in loud.stderr.splitlines() if " etfarm.device.box DEBUG exec: " in line]
    assert commands and any("mkdir -p" in line for line in commands)
    assert "paramiko" not in loud.stderr


def test_devices_json_is_one_document(tmp_path: Path) -> None:
    import json

    result = etfarm("devices", "--no-check", "--json")
    assert result.returncode == 0
    assert [d["name"] for d in json.loads(result.stdout)["devices"]] == ["local"]
