"""Issue 21 (5, 6): the host's own files, the user's files and counts from any source are one line naming the
path or key, exit 2, never an internal error; a read-only store can be read; a mute SSH server is one line.

Real files throughout: a store path under a regular file; a store on a real 400 KiB tmpfs filled while
recording; run directories and stores on read-only bind mounts (the tests run as root, where chmod stops
no write: a `mount -o remount,bind,ro` does); a garbage ssh key; a manifest edited to `runs: "abc"` or
`runs: 1e12`; a real TCP server that accepts and never sends an SSH banner.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TINY = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"
FAST = ("--backend", "portable", "--runs", "1", "--iterations", "3", "--warmup", "1", "--untraced-runs", "0")


def etfarm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def one_error(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    """Exit 2, no traceback, exactly one line besides progress lines, naming `fragment`."""
    lines = [line for line in result.stderr.splitlines() if not line.startswith("[")]
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-3000:]
    assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run directory (tiny_mlp, one process run on `local`)."""
    out = tmp_path_factory.mktemp("finished") / "run"
    result = etfarm("run", "--model", TINY, *FAST, "--no-store", "--no-report", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    return out


def copy_run(run: Path, dest: Path, **config: object) -> Path:
    """A copy of `run` made to look interrupted before any process run (so --resume has work), with
    `config` keys of its manifest replaced."""
    shutil.copytree(run, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    device = manifest["devices"]["local"]
    device["status"] = "interrupted"
    device["models"]["tiny_mlp"].update(status="partial", runs={})
    manifest["config"].update(config)
    (dest / "manifest.json").write_text(json.dumps(manifest))
    return dest


@pytest.fixture(scope="module")
def inputs(finished_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's files of the cases below, in one folder."""
    root = tmp_path_factory.mktemp("inputs")
    (root / "a-file").write_text("not a directory\n")
    (root / "long.yaml").write_text(f"devices:\n  {LONG_NAME}:\n    transport: local\n")
    (root / "garbage.key").write_bytes(os.urandom(400))
    (root / "ssh.yaml").write_text(f"devices:\n  board:\n    transport: ssh\n    target: host\n    host: 127.0.0.1\n"
                                   f"    key: {root / 'garbage.key'}\n")
    plan = {"devices": ["local"], "models": [TINY], "runs": 1, "iterations": 3, "warmup": 1, "report": str(root / "a-file")}
    (root / "file-report.json").write_text(json.dumps(plan))
    (root / "twice.json").write_text(json.dumps({**plan, "models": [TINY, TINY], "report": str(root / "r")}))
    copy_run(finished_run, root / "abc", runs="abc")
    copy_run(finished_run, root / "huge", runs=1e12)
    (root / "finished").symlink_to(finished_run)
    (root / "deep").mkdir()
    (root / "deep" / "manifest.json").write_text("[" * 100_000)
    traversal = copy_run(finished_run, root / "traversal")
    manifest = json.loads((traversal / "manifest.json").read_text())
    models = manifest["devices"]["local"]["models"]
    models["../../../escaped"] = models.pop("tiny_mlp")
    (traversal / "manifest.json").write_text(json.dumps(manifest))
    os.mkfifo(root / "pipe.etdp")
    os.mkfifo(root / "pipe.html")
    (root / "newline.yaml").write_text('devices:\n  b:\n    transport: local\n    workdir: "/tmp/w\\nx"\n')
    (root / "cpus.yaml").write_text('devices:\n  b:\n    transport: local\n    cpus: "99999999999999999999"\n')
    (root / "bogus-baseline.json").write_text(json.dumps({**plan, "baseline": "no-such-run", "report": str(root / "rb")}))
    (root / "closes.py").write_text("import sys\nsys.stdout.close()\n\ndef build():\n    return None\n")
    return root


LONG_NAME = "d" * 300
CASES = [  # (id, argv from the inputs folder, what the one line must say)
    ("store-under-a-file", lambda p: ["run", "--model", TINY, "--store", f"{p}/a-file/results.db"],
     "/a-file/results.db: {p}/a-file is a file, not a directory"),
    ("import-to-a-store-under-a-file", lambda p: ["store", "import", f"{p}/finished", "--store", f"{p}/a-file/results.db"],
     "{p}/a-file is a file, not a directory"),
    ("plan-report-is-a-file", lambda p: ["nightly", "--plan", f"{p}/file-report.json"], "file-report.json: report: {p}/a-file"),
    ("plan-lists-a-model-twice", lambda p: ["nightly", "--plan", f"{p}/twice.json"],
     f"models: model names must be unique in a job: 'tiny_mlp' ({TINY} listed 2 times)"),
    ("device-name-of-300-characters", lambda p: ["run", "--config", f"{p}/long.yaml", "--devices", LONG_NAME, "--model", TINY],
     "long.yaml: devices.dddd"),
    ("garbage-ssh-key", lambda p: ["run", "--config", f"{p}/ssh.yaml", "--devices", "board", "--model", TINY],
     "ssh.yaml: devices.board.key: {p}/garbage.key is not a private key"),
    ("timeout-inf", lambda p: ["run", "--model", TINY, "--timeout", "inf"], "'--timeout'"),
    ("max-temp-nan", lambda p: ["run", "--model", TINY, "--max-temp", "nan"], "'--max-temp'"),
    ("resumed-runs-abc", lambda p: ["run", "--resume", f"{p}/abc"],
     "malformed manifest: config.runs: expected a whole number, got 'abc'"),
    ("resumed-runs-1e12", lambda p: ["run", "--resume", f"{p}/huge"],
     "malformed manifest: config.runs: 1000000000000 is outside [1, 10000]"),
    # from the sweep (docs/reference/faults.md, "Faults: input")
    ("manifest-nested-100000-deep", lambda p: ["report", f"{p}/deep"], "cannot read manifest: RecursionError"),
    ("manifest-names-a-path", lambda p: ["run", "--resume", f"{p}/traversal"],
     "devices.local.models: '../../../escaped' is not a plain name"),
    ("etdump-is-a-pipe", lambda p: ["analyze", f"{p}/pipe.etdp"], "pipe.etdp: not a regular file"),
    ("report-onto-a-pipe", lambda p: ["report", f"{p}/finished", "--output", f"{p}/pipe.html"],
     "pipe.html: exists and is not a regular file (a device, a pipe, a directory); refusing to replace it"),
    ("store-is-a-pipe", lambda p: ["history", "--store", f"{p}/pipe.html"], "is not a regular file (a device, a pipe)"),
    ("workdir-with-a-newline", lambda p: ["run", "--config", f"{p}/newline.yaml", "--devices", "b", "--model", TINY],
     "newline.yaml: devices.b.workdir: expected an absolute path (no control characters)"),
    ("cpu-list-past-any-cpu", lambda p: ["run", "--config", f"{p}/cpus.yaml", "--devices", "b", "--model", TINY],
     "cpus.yaml: devices.b.cpus: expected a cpu list"),
    ("plan-baseline-names-nothing", lambda p: ["nightly", "--plan", f"{p}/bogus-baseline.json", "--store", f"{p}/s.db"],
     "baseline 'no-such-run': neither a run directory nor a stored run id"),
    ("factory-closes-stdout", lambda p: ["export", f"{p}/closes.py:build"], "build() must return"),
    # issue 31: the flag is named, and a file is never said not to exist
    ("compare-html-under-a-file", lambda p: ["compare", f"{p}/finished", f"{p}/finished", "--html", f"{p}/a-file/ab.html"],
     "--html {p}/a-file/ab.html: {p}/a-file is a file, not a directory"),
]


@pytest.mark.parametrize("case_id, argv, fragment", CASES, ids=[c[0] for c in CASES])
def test_user_files_and_bounds_are_one_line_exit_2(inputs: Path, tmp_path: Path, case_id: str,
                                                   argv: Callable[[Path], list[str]], fragment: str) -> None:
    one_error(etfarm(*argv(inputs), cwd=tmp_path), fragment.format(p=inputs))
    assert not (tmp_path / "etfarm-runs").exists() and not (inputs / "rb").exists()  # refused before anything ran


def test_a_run_directory_another_etfarm_works_in_is_refused(finished_run: Path, tmp_path: Path) -> None:
    """`--resume DIR` while another etfarm holds DIR (here: this test, by the same flock on the directory)."""
    run = copy_run(finished_run, tmp_path / "run")
    fd = os.open(run, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        one_error(etfarm("run", "--resume", str(run), "--no-store"), "another etfarm is working in this run directory")
    finally:
        os.close(fd)
    assert json.loads((run / "manifest.json").read_text())["status"] == "interrupted"  # untouched


def test_a_full_disk_while_recording_says_so(finished_run: Path, tmp_path: Path, mounts: Callable[..., Path]) -> None:
    disk = mounts(tmp_path / "disk", size="400k")
    store = disk / "results.db"
    assert etfarm("store", "import", str(finished_run), "--store", str(store)).returncode == 0
    second = copy_run(finished_run, tmp_path / "second")
    manifest = json.loads((second / "manifest.json").read_text())
    (second / "manifest.json").write_text(json.dumps({**manifest, "run_id": "20260101-000000-full"}))
    for path in disk.glob("results.db-*"):
        path.unlink()
    (disk / "pad").write_bytes(b"\0" * (shutil.disk_usage(disk).free - 40 * 1024))  # leave 40 KiB
    result = etfarm("store", "import", str(second), "--store", str(store))
    one_error(result, f"the results store {store}: its disk is full")
    assert "rollback" not in result.stderr


def test_read_only_run_directories_are_one_line(finished_run: Path, tmp_path: Path,
                                                mounts: Callable[..., Path]) -> None:
    shared = tmp_path / "shared"
    copy_run(finished_run, shared / "run")
    mounts(shared)
    run = shared / "run"
    one_error(etfarm("report", str(run), "--format", "md", "--output", str(shared / "sub") + "/"), str(shared / "sub"))
    one_error(etfarm("numerics", str(run)), f"etfarm numerics {run}: cannot write in it (Read-only file system)")
    one_error(etfarm("run", "--resume", str(run)), f"--resume {run}: cannot write in it (Read-only file system)")
    page = shared / "ab.html"  # the A/B page: said before comparing, naming --html (was: `--output: cannot write`)
    result = etfarm("compare", str(finished_run), str(finished_run), "--html", str(page))
    one_error(result, f"--html {page}: cannot write in {shared} (read-only, or not ours)")
    assert result.stdout == ""


def test_a_store_on_a_read_only_mount_can_be_read(finished_run: Path, tmp_path: Path,
                                                  mounts: Callable[..., Path]) -> None:
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    store = shelf / "results.db"
    assert etfarm("store", "import", str(finished_run), "--store", str(store)).returncode == 0
    run_id = json.loads((finished_run / "manifest.json").read_text())["run_id"]
    mounts(shelf)
    history = etfarm("history", "--store", str(store))
    assert history.returncode == 0 and run_id in history.stdout, history.stderr
    shown = etfarm("history", "show", run_id, "--store", str(store))
    assert shown.returncode == 0 and f"run {run_id}: ok" in shown.stdout, shown.stderr
    report = etfarm("report", str(finished_run), "--store", str(store), "--output", str(tmp_path / "report.html"))
    assert report.returncode == 0 and "no history" not in report.stdout + report.stderr, report.stderr
    one_error(etfarm("store", "import", str(finished_run), "--store", str(store)), f"the results store {store} is read-only")
    assert sorted(p.name for p in shelf.iterdir()) == ["results.db"]  # nothing written beside it either


@pytest.mark.parametrize("verbose", [False, True], ids=["plain", "verbose"])
def test_an_ssh_server_that_never_speaks_is_one_line(tmp_path: Path, verbose: bool) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:  # accept every connection and never say a word
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    inventory = tmp_path / "devices.yaml"
    inventory.write_text(f"devices:\n  mute:\n    transport: ssh\n    target: host\n    host: 127.0.0.1\n"
                         f"    port: {listener.getsockname()[1]}\n    key: {key}\n    connect_timeout: 1\n"
                         f"    known_hosts: {tmp_path / 'known_hosts'}\n")
    try:  # -v shows etfarm's own loggers (the device commands), still never paramiko's traceback
        check = etfarm(*(["-v"] if verbose else []), "devices", "check", "mute", "--config", str(inventory), "--json")
        run = None if verbose else etfarm("run", "--config", str(inventory), "--devices", "mute", "--model", TINY,
                                          *FAST, "--no-store", "--out", str(tmp_path / "run"))
    finally:
        listener.close()
        for conn in accepted:
            conn.close()
    assert check.returncode == 1, check.stderr[-3000:]
    assert "Traceback" not in check.stderr and "paramiko" not in check.stderr, check.stderr[-3000:]
    assert "sent no SSH banner in time" in json.loads(check.stdout)["error"]
    if run is not None:
        assert run.returncode == 1 and "Traceback" not in run.stderr and "paramiko" not in run.stderr, run.stderr
        failed = [line for line in run.stderr.splitlines() if "FAILED" in line]
        assert len(failed) == 1 and "sent no SSH banner in time" in failed[0], run.stderr[-3000:]
        assert [line for line in run.stderr.splitlines() if not line.startswith("[")] == [], run.stderr


def test_an_out_on_a_full_disk_is_one_line_before_anything_runs(tmp_path: Path, mounts: Callable[..., Path]) -> None:
    """A full disk still takes a new empty file: `--out` there used to pass the check, export, then print
    fifteen `--- Logging error ---` tracebacks and end as an internal error from closing the job log."""
    disk = mounts(tmp_path / "disk", size="64k", full=True)
    result = etfarm("run", "--model", TINY, *FAST, "--no-store", "--out", str(disk / "run"))
    one_error(result, f"--out {disk / 'run'}: cannot write in {disk}: No space left on device")
    assert "Logging error" not in result.stderr and "export" not in result.stderr, result.stderr[-3000:]
    assert not (disk / "run").exists()


def test_publish_reads_a_read_only_store_and_refuses_a_site_it_cannot_write(finished_run: Path, tmp_path: Path,
                                                                            mounts: Callable[..., Path]) -> None:
    """`etfarm publish`: a store on a read-only mount is read; a site directory on a read-only mount, or on a full
    disk, is one line naming it (exit 2), before the store is read."""
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    store = shelf / "results.db"
    assert etfarm("store", "import", str(finished_run), "--store", str(store)).returncode == 0
    mounts(shelf)
    published = etfarm("publish", "--out", str(tmp_path / "site"), "--store", str(store))
    assert published.returncode == 0 and "published 1 series from 1 stored runs" in published.stdout, published.stderr
    assert 'data-model="tiny_mlp"' in (tmp_path / "site" / "index.html").read_text()
    for where, why in ((mounts(tmp_path / "read-only"), "Read-only file system"),
                       (mounts(tmp_path / "full", size="1M", full=True), "No space left on device")):
        refused = etfarm("publish", "--out", str(where), "--store", str(store))
        assert refused.returncode == 2 and refused.stderr.splitlines() == [
            f"error: --out {where}: cannot write in it ({why})"], refused.stderr
