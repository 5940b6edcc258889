"""Bad input gets one line naming the problem, exit 2, no traceback (the real CLI, in a subprocess)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = str(REPO / "configs" / "models" / "tiny_cnn.py") + ":build"
PROGRESS_LINE = re.compile(r"^\[ *\d+\.\ds\] ")


def etfarm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bad")
    files = {
        "raises.py": "def build():\n    raise RuntimeError('no weights here')\n",
        "raises_lines.py": "def build():\n    raise RuntimeError('no weights here\\nsee the wiki\\n\\nor ask')\n",
        "syntax.py": "def build(:\n",
        "wrong_return.py": "def build():\n    return 42\n",
        "not_module.py": "import torch\ndef build():\n    return 'model', (torch.ones(1),)\n",
        "data_dependent.py": ("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
                              "        return x + 1 if x.sum() > 0 else x - 1\n"
                              "def build():\n    return M(), (torch.ones(2, 3),)\n"),
        "malformed.yaml": "devices: [unclosed\n",
        "badport.yaml": "devices:\n  rpi:\n    transport: ssh\n    target: linux-aarch64\n    host: h\n    key: k\n    port: twenty-two\n",
        "duplicate.yaml": "devices:\n  rpi:\n    transport: local\n  rpi:\n    transport: local\n",
        "previous-run/manifest.json": "{}",
        "stopped-run/manifest.json": '{"schema_version": 1, "run_id": "r1", "status": "interrupted", "started": "t", '
                                     '"config": {"devices": ["local"], "models": ["m.py:build"], "backend": "xnnpack", '
                                     '"runs": 3}}',
        "a-file": "not a directory",
        "badtimeout.yaml": "devices:\n  rpi:\n    transport: ssh\n    target: host\n    host: h\n    key: k\n    connect_timeout: 0\n",
        "badcpus.yaml": "devices:\n  board:\n    transport: local\n    cpus: \"0-3; reboot\"\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(text)
    (root / "latin1.yaml").write_bytes(b"devices:\n  caf\xe9:\n    transport: local\n")
    files["latin1.yaml"] = ""
    return {name: root / name for name in files}


CASES = [
    # (id, argv builder, fragment expected in the one-line error)
    ("spec-without-factory", lambda p: ["run", "--model", str(p["raises.py"])], "has no factory"),
    ("missing-model-file", lambda p: ["run", "--model", "nowhere/model.py:build"], "no such file"),
    ("missing-pte", lambda p: ["export", "nowhere.pte"], "no such .pte file"),
    ("factory-raises", lambda p: ["run", "--model", f"{p['raises.py']}:build"], "factory build() raised RuntimeError: no weights here"),
    ("factory-raises-lines", lambda p: ["run", "--model", f"{p['raises_lines.py']}:build"],
     "factory build() raised RuntimeError: no weights here | see the wiki | or ask"),
    ("syntax-error", lambda p: ["export", f"{p['syntax.py']}:build"], "importing syntax.py raised SyntaxError"),
    ("wrong-return", lambda p: ["export", f"{p['wrong_return.py']}:build"], "must return (torch.nn.Module, example_inputs_tuple)"),
    ("not-a-module", lambda p: ["export", f"{p['not_module.py']}:build"], "where a torch.nn.Module was expected"),
    # torch.export printed ~20 lines of partial graph on stderr before this line (issue 31)
    ("export-fails", lambda p: ["export", f"{p['data_dependent.py']}:build"],
     "failed: GuardOnDataDependentSymNode: Could not guard on data-dependent expression"),
    # under a recipe, torch's partial graph was printed twice (19 lines) and "the other configurations go on" said
    ("export-fails-recipe", lambda p: ["export", f"{p['data_dependent.py']}:build", "--recipe", "fp32"],
     "with recipe fp32 failed: Unsupported: Data-dependent branching"),
    ("run-fails-recipe", lambda p: ["run", "--model", f"{p['data_dependent.py']}:build", "--recipe", "fp32"],
     "with recipe fp32 failed: Unsupported: Data-dependent branching"),
    ("missing-factory", lambda p: ["export", f"{p['raises.py']}:make"], "has no callable 'make'"),
    ("unknown-device", lambda p: ["run", "--devices", "local,pixel9", "--model", TINY], "unknown device 'pixel9'"),
    ("malformed-config", lambda p: ["run", "--config", str(p["malformed.yaml"]), "--model", TINY], "malformed.yaml: line"),
    ("bad-config-key", lambda p: ["devices", "--config", str(p["badport.yaml"])], "badport.yaml: devices.rpi.port: expected an integer"),
    ("missing-config", lambda p: ["devices", "--config", "/nonexistent/devices.yaml"], "devices.yaml: no such file"),
    ("unknown-backend", lambda p: ["run", "--backend", "tpu", "--model", TINY], "'tpu' is not one of 'xnnpack', 'portable'"),
    ("unknown-target", lambda p: ["build", "--target", "ios-arm64"], "'ios-arm64' is not one of 'host'"),
    ("name-count", lambda p: ["run", "--model", TINY, "--model", TINY, "--name", "a"], "--name given 1 time(s) for 2 --model(s)"),
    ("name-clash", lambda p: ["run", "--model", TINY, "--model", TINY], "model names must be unique in a job"),
    ("bad-option-value", lambda p: ["run", "--runs", "0", "--model", TINY], "--runs"),
    ("unknown-order", lambda p: ["run", "--order", "random", "--model", TINY], "--order: expected interleaved or sequential"),
    ("bad-connect-timeout", lambda p: ["devices", "--config", str(p["badtimeout.yaml"])],
     "badtimeout.yaml: devices.rpi.connect_timeout: expected a number of seconds > 0"),
    ("bad-cpus", lambda p: ["devices", "--config", str(p["badcpus.yaml"])], "badcpus.yaml: devices.board.cpus: expected a cpu list"),
    ("missing-etdump", lambda p: ["analyze", "/nonexistent/x.etdp"], "/nonexistent/x.etdp"),
    ("duplicate-config-key", lambda p: ["devices", "--config", str(p["duplicate.yaml"])], "line 4: duplicate key rpi (first at line 2)"),
    ("non-utf8-config", lambda p: ["devices", "--no-check", "--config", str(p["latin1.yaml"])], "latin1.yaml: not UTF-8 text"),
    ("out-holds-a-run", lambda p: ["run", "--model", TINY, "--out", str(p["previous-run/manifest.json"].parent)], "already holds a run"),
    ("out-is-a-file", lambda p: ["run", "--model", TINY, "--out", str(p["a-file"])], "is not a directory"),
    ("out-unwritable", lambda p: ["run", "--model", TINY, "--out", "/proc/etfarm-out"], "--out /proc/etfarm-out: cannot write in /proc"),
    ("run-without-model", lambda p: ["run"], "--model is required (or --resume DIR"),
    ("resume-not-a-run", lambda p: ["run", "--resume", str(p["a-file"].parent / "nowhere")], "no manifest.json there"),
    ("resume-other-runs", lambda p: ["run", "--resume", str(p["stopped-run/manifest.json"].parent), "--runs", "5"],
     "--runs 5 differs from the recorded 3"),
    ("resume-other-out", lambda p: ["run", "--resume", str(p["stopped-run/manifest.json"].parent), "--out", "elsewhere"],
     "differs from the recorded"),
    ("resume-local-run-on-a-farm", lambda p: ["run", "--resume", str(p["stopped-run/manifest.json"].parent),
                                              "--scheduler", "tcp://127.0.0.1:1"],
     "ran on one host, not on a farm; resume it without --scheduler"),
]


@pytest.mark.parametrize("case_id, argv, fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_exit_2(bad_inputs: dict[str, Path], tmp_path: Path, case_id: str, argv, fragment: str) -> None:
    result = etfarm(*argv(bad_inputs), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    # Besides progress lines ("[  0.0s] exporting ..."), exactly one line: a multi-line message
    # (a factory's exception, a syntax error) is folded into it.
    error_lines = [line for line in result.stderr.splitlines() if not PROGRESS_LINE.match(line)]
    assert len(error_lines) == 1 and error_lines[0].startswith("error: "), result.stderr
    assert fragment in error_lines[0]
    assert "the other configurations go on" not in result.stderr  # a job of one configuration has no others
    # A usage error is found before anything is made: no run directory is left behind.
    assert not (tmp_path / "etfarm-runs").exists()


def test_help_does_not_import_torch_or_executorch() -> None:
    probe = ("import sys\nfrom orchestrator.cli import main\n"
             "for argv in (['--help'], ['run', '--help'], ['devices', '--no-check'], ['analyze', '--help'],\n"
             "             ['publish', '--help'], ['bisect', '--help']):\n"
             "    assert main(argv) == 0, argv\n"
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'executorch', 'plotly', 'pandas'))\n"
             "print('HEAVY', heavy)\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout


def test_console_script_is_installed() -> None:
    exe = Path(sys.executable).parent / "etfarm"
    result = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0
    for command in ("run", "export", "build", "analyze", "trace", "devices"):
        assert command in result.stdout
