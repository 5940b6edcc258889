"""The device-agent contract, checked the same way against every transport's real peer.

The testbed devices run on this host, so each check also looks at the device's
files directly: what the agent reports must match what is really there.
"""

from __future__ import annotations

import hashlib
import os
import platform
import time
from pathlib import Path

import pytest

from device_agents.base import DeviceAgent
from orchestrator.base.errors import CommandFailed, DeviceError

# Names that break naive quoting: spaces, both quotes, `;`, `$`, a backslash-free glob.
AWKWARD = "it's a \"model\"; rm -rf x $HOME *.pte"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_files(root: Path, names: dict[str, bytes], executable: tuple[str, ...] = ()) -> dict[str, Path]:
    files = {}
    for rel, data in names.items():
        path = root / "local" / rel.replace("/", "__")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if rel in executable:
            path.chmod(0o755)
        files[rel] = path
    return files


def check_stage(agent: DeviceAgent, tmp_path: Path) -> None:
    """Push, verify, skip unchanged (0 bytes), push only what changed, keep modes."""
    files = make_files(
        tmp_path,
        {"bin/runner": b"#!/bin/sh\necho runner says \"$@\"\n", "model.pte": os.urandom(300_000), "lib/libx.so": b"x" * 10},
        executable=("bin/runner",),
    )
    first = agent.stage(files)
    assert sorted(first.pushed) == sorted(files)
    assert first.bytes_pushed == sum(p.stat().st_size for p in files.values())
    workdir = Path(agent.spec.workdir)
    for rel, local in files.items():
        assert _sha(workdir / rel) == _sha(local), rel
    assert os.access(workdir / "bin/runner", os.X_OK)
    assert not list(workdir.rglob("*.partial"))

    again = agent.stage(files)
    assert again.pushed == () and again.bytes_pushed == 0
    assert sorted(again.skipped) == sorted(files)

    files["model.pte"].write_bytes(os.urandom(1000))
    changed = agent.stage(files)
    assert changed.pushed == ("model.pte",) and changed.bytes_pushed == 1000
    assert _sha(workdir / "model.pte") == _sha(files["model.pte"])

    result = agent.run([agent.remote_path("bin/runner"), "a b", "c;d"], cwd=agent.spec.workdir)
    assert result.ok, result
    assert result.stdout.strip() == "runner says a b c;d"


def check_exit_codes_and_deadline(agent: DeviceAgent) -> None:
    """The real exit code, stdout/stderr content, and a device-side deadline that bites."""
    result = agent.run(["sh", "-c", "echo out; echo err >&2; exit 7"])
    assert result.exit_code == 7 and not result.ok and not result.timed_out
    assert "out" in result.stdout and "err" in result.stdout + result.stderr
    killed = agent.run(["sh", "-c", "echo before; kill -9 $$"])
    assert killed.exit_code == 137 and "before" in killed.stdout  # a signal death is a code, not a lost status
    with pytest.raises(CommandFailed) as failed:
        agent.check(["sh", "-c", "echo doomed; exit 3"])
    assert failed.value.returncode == 3 and "doomed" in failed.value.output_tail

    started = time.monotonic()
    slow = agent.run(["sleep", "30"], timeout_s=1)
    assert slow.timed_out and slow.exit_code is None and not slow.ok
    assert time.monotonic() - started < 10, "the device-side deadline did not stop the command"


def check_fetch(agent: DeviceAgent, tmp_path: Path) -> None:
    """Pull into a folder safely: plain names only, size cap, no partial files left."""
    agent.check(["sh", "-c", "head -c 5000 /dev/urandom > out.bin"], cwd=agent.spec.workdir)
    dest = tmp_path / "fetched"
    got = agent.fetch("out.bin", dest)
    assert got == dest.resolve() / "out.bin"
    assert _sha(got) == _sha(Path(agent.spec.workdir) / "out.bin")

    for bad in ("../escape.bin", "a/b", "..", ".", "/etc/passwd"):
        with pytest.raises(DeviceError, match="unsafe name|outside"):
            agent.fetch("out.bin", dest, name=bad)
    with pytest.raises(DeviceError):
        agent.fetch("../out.bin", dest)  # the device-side path must stay in the workdir too

    with pytest.raises(DeviceError, match="cap"):
        agent.fetch("out.bin", dest, name="capped.bin", max_bytes=4999)
    # The transport enforces the cap itself too (a file that grows after the size check).
    with pytest.raises(DeviceError, match="cap"):
        agent._pull(agent.remote_path("out.bin"), tmp_path / "direct.bin", 100)
    assert sorted(p.name for p in dest.iterdir()) == ["out.bin"]

    with pytest.raises(DeviceError, match="no such file"):
        agent.fetch("missing.bin", dest)


def check_describe(agent: DeviceAgent) -> None:
    facts = agent.describe()
    assert isinstance(facts.cores, int) and facts.cores >= 1
    assert facts.abi == platform.machine()
    assert facts.os == "Linux"


def check_cleanup(agent: DeviceAgent) -> None:
    workdir = Path(agent.spec.workdir)
    agent.check(["sh", "-c", "mkdir -p sub && echo x > sub/f"], cwd=agent.spec.workdir)
    agent.remove("sub")
    assert not (workdir / "sub").exists()
    agent.check(["rm", "-rf", "--", agent.spec.workdir])
    assert not workdir.exists()


def check_awkward_names(agent: DeviceAgent, tmp_path: Path) -> None:
    """A workdir and file names with spaces, quotes, `;` and `$` survive every step."""
    assert AWKWARD in agent.spec.workdir
    files = make_files(tmp_path, {AWKWARD: b"payload\n", f"dir {AWKWARD}/x;y": b"nested\n"})
    assert len(agent.stage(files).pushed) == 2
    assert agent.stage(files).bytes_pushed == 0
    workdir = Path(agent.spec.workdir)
    assert (workdir / AWKWARD).read_bytes() == b"payload\n"
    assert (workdir / f"dir {AWKWARD}" / "x;y").read_bytes() == b"nested\n"
    result = agent.run(["cat", AWKWARD], cwd=agent.spec.workdir, env={"WEIRD": "a 'b' \"c\"; d"})
    assert result.ok and result.stdout == "payload\n"
    echoed = agent.run(["sh", "-c", 'printf %s "$WEIRD"'], env={"WEIRD": "a 'b' \"c\"; d"})
    assert echoed.stdout == "a 'b' \"c\"; d"
    got = agent.fetch(AWKWARD, tmp_path / "pulled")
    assert got.name == AWKWARD and got.read_bytes() == b"payload\n"
    agent.remove(f"dir {AWKWARD}")
    assert not (workdir / f"dir {AWKWARD}").exists() and (workdir / AWKWARD).exists()


def check_workflow(agent: DeviceAgent, tmp_path: Path) -> None:
    """The whole contract on a connected agent: connect made the workdir, then stage, run, fetch, describe, cleanup."""
    assert Path(agent.spec.workdir).is_dir()  # connect creates the workdir
    check_stage(agent, tmp_path)
    check_exit_codes_and_deadline(agent)
    check_fetch(agent, tmp_path)
    check_describe(agent)
    check_cleanup(agent)
