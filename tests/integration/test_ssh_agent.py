"""SSHAgent against a real OpenSSH server (orchestrator/emulate/sshd.py)."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from testbed import agent_checks

from device_agents import create_agent
from device_agents.base import DeviceSpec, ExecResult
from device_agents.ssh import SSHAgent, trust_host_key
from orchestrator.base.errors import DeviceError
from orchestrator.emulate.sshd import SshTestHost


def test_workflow(ssh_device: DeviceSpec, tmp_path: Path) -> None:
    agent = create_agent(ssh_device)
    assert isinstance(agent, SSHAgent)
    with agent:
        agent_checks.check_workflow(agent, tmp_path)


def test_awkward_names(sshd_host: SshTestHost, tmp_path: Path) -> None:
    spec = sshd_host.spec("awkward", tmp_path / f"work {agent_checks.AWKWARD}")
    with SSHAgent(spec) as agent:
        agent_checks.check_awkward_names(agent, tmp_path)


def test_exec_prefix_applies_only_when_asked(sshd_host: SshTestHost, tmp_path: Path) -> None:
    spec = sshd_host.spec("prefixed", tmp_path / "w", exec_prefix=("env", "PREFIXED=yes"))
    with SSHAgent(spec) as agent:
        assert agent.run(["sh", "-c", "echo ${PREFIXED:-no}"], use_exec_prefix=True).stdout.strip() == "yes"
        assert agent.run(["sh", "-c", "echo ${PREFIXED:-no}"]).stdout.strip() == "no"


def _assert_refused(spec: DeviceSpec, *phrases: str) -> None:
    with pytest.raises(DeviceError) as refused, SSHAgent(spec) as agent:
        agent.stage({"model.pte": Path(__file__)})
    message = str(refused.value)
    for phrase in phrases:
        assert phrase in message, message
    assert f"etfarm devices trust {spec.name}" in message
    assert not Path(spec.workdir).exists(), "something reached the device"


def test_unknown_host_key_is_refused(unknown_key_ssh_device: DeviceSpec) -> None:
    _assert_refused(unknown_key_ssh_device, "is unknown", "SHA256:")


def test_wrong_host_key_is_refused(wrong_key_ssh_device: DeviceSpec) -> None:
    _assert_refused(wrong_key_ssh_device, "does not match", "SHA256:")


def test_user_known_hosts_is_never_consulted(sshd_host: SshTestHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "known_hosts").write_text(sshd_host.known_hosts.read_text())
    monkeypatch.setenv("HOME", str(home))
    _assert_refused(sshd_host.spec("homeless", tmp_path / "w", known_hosts=tmp_path / "none"), "is unknown")


def test_trust_records_the_key(sshd_host: SshTestHost, wrong_key_ssh_device: DeviceSpec, tmp_path: Path) -> None:
    keygen_fp = subprocess.run(
        ["ssh-keygen", "-lf", str(sshd_host.host_key) + ".pub"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    fresh = sshd_host.spec("fresh", tmp_path / "w", known_hosts=tmp_path / "new dir" / "known_hosts")
    trusted = trust_host_key(fresh)
    assert trusted.fingerprint == f"ssh-ed25519 {keygen_fp}" and trusted.known_hosts == str(tmp_path / "new dir" / "known_hosts")
    with SSHAgent(fresh) as agent:
        assert agent.run(["true"]).ok
    # Trusting again on purpose replaces a stale entry instead of adding a second one.
    known_hosts = Path(wrong_key_ssh_device.settings.known_hosts)  # type: ignore[attr-defined]
    known_hosts.write_text("# kept comment\n" + known_hosts.read_text() + "[other]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAA\n")
    trust_host_key(wrong_key_ssh_device)
    lines = known_hosts.read_text().splitlines()
    assert lines[0] == "# kept comment" and lines[1].startswith("[other]:2222")
    assert lines[2] == f"{sshd_host.host_pattern} {sshd_host.host_key_line}" and len(lines) == 3
    with SSHAgent(wrong_key_ssh_device) as agent:
        assert agent.run(["true"]).ok


def test_bad_key_and_unreachable_host_fail_clearly(sshd_host: SshTestHost, tmp_path: Path) -> None:
    with pytest.raises(DeviceError, match="'key'.*missing.*no passwords"):
        SSHAgent(sshd_host.spec("keyless", tmp_path / "w", key=""))
    with pytest.raises(DeviceError, match="does not exist"):
        SSHAgent(sshd_host.spec("nokey", tmp_path / "w", key=str(tmp_path / "absent"))).connect()
    from orchestrator.emulate.sshd import keygen

    keygen(tmp_path / "stranger")
    with pytest.raises(DeviceError, match="authentication"):
        SSHAgent(sshd_host.spec("stranger", tmp_path / "w", key=str(tmp_path / "stranger"))).connect()
    from testbed import free_port

    with pytest.raises(DeviceError, match="cannot connect"):
        SSHAgent(sshd_host.spec("nobody", tmp_path / "w", port=free_port())).connect()


def test_connection_lost_mid_command_is_a_failure(ssh_server_factory: Callable[[], SshTestHost], tmp_path: Path) -> None:
    host = ssh_server_factory()
    with SSHAgent(host.spec("doomed", tmp_path / "w")) as agent:
        results: list[ExecResult] = []
        worker = threading.Thread(target=lambda: results.append(agent.run(["sleep", "30"], timeout_s=20)))
        worker.start()
        time.sleep(1.0)
        host.stop()  # sshd, the connection process and the session all die
        worker.join(timeout=15)
        assert not worker.is_alive()
    (result,) = results
    assert result.exit_code is None and not result.ok and not result.timed_out
    assert "exit status" in result.stderr or "transport" in result.stderr


def test_missing_testbed_tool_fails_under_ci_and_skips_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    from testbed import require_tool

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="not installed"):
        require_tool("etfarm-no-such-tool")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        require_tool("etfarm-no-such-tool")
    assert require_tool("sh").endswith("/sh")


def test_host_side_deadline_returns_in_time(ssh_device: DeviceSpec) -> None:
    with SSHAgent(ssh_device) as agent:
        started = time.monotonic()
        # the hook: no device-side `timeout`. 5 s for "going" to come back on a loaded host; returning well before the
        # command's 60 s is the host-side deadline at work
        result = agent._exec("echo going; sleep 60", 5.0)
        assert result.timed_out and result.exit_code is None and "going" in result.stdout
        assert time.monotonic() - started < 15
        assert agent.run(["echo", "still usable"]).stdout == "still usable\n"


def test_rpi5_fixture_runs_aarch64_binaries_under_qemu(rpi5_device: DeviceSpec, tmp_path: Path) -> None:
    from testbed import require_tool

    gcc = require_tool("aarch64-linux-gnu-gcc")
    source = tmp_path / "hello.c"
    source.write_text('#include <stdio.h>\nint main(int c, char **v) { printf("aarch64 says %s\\n", v[1]); return 3; }\n')
    binary = tmp_path / "hello"
    subprocess.run([gcc, "-O1", "-o", str(binary), str(source)], check=True)
    with SSHAgent(rpi5_device) as agent:
        assert agent.stage({"bin/hello": binary}).pushed == ("bin/hello",)
        result = agent.run([agent.remote_path("bin/hello"), "hi; there"], use_exec_prefix=True)
        assert (result.exit_code, result.stdout) == (3, "aarch64 says hi; there\n")


def test_known_hosts_markers_revoked_keys_are_refused_and_cert_authorities_ignored(sshd_host: SshTestHost, tmp_path: Path) -> None:
    trusted = sshd_host.known_hosts.read_text().strip()  # "[127.0.0.1]:PORT ssh-ed25519 AAAA..."
    _, keytype, key = trusted.split()
    ca_line = f"@cert-authority *.example.org {keytype} {key}"
    # A CA line beside the plain entry: paramiko alone raises here; etfarm connects.
    with_ca = tmp_path / "with_ca"
    with_ca.write_text(f"{ca_line}\n{trusted}\n")
    with SSHAgent(sshd_host.spec("ca", tmp_path / "w1", known_hosts=with_ca)) as agent:
        assert agent.check(["echo", "hi"]).stdout.strip() == "hi"
    # The same key also marked @revoked: refused before anything reaches the device.
    revoked = tmp_path / "revoked"
    revoked.write_text(f"{trusted}\n@revoked * {keytype} {key}\n")
    spec = sshd_host.spec("revoked", tmp_path / "w2", known_hosts=revoked)
    with pytest.raises(DeviceError, match="marked @revoked"), SSHAgent(spec) as agent:
        agent.stage({"model.pte": Path(__file__)})
    assert not (tmp_path / "w2").exists()
    # `devices trust` will not trust a revoked key, and never drops the marker lines.
    with pytest.raises(DeviceError, match="not trusting it"):
        trust_host_key(spec)
    assert "@revoked" in revoked.read_text()
    # A malformed line is an error naming the file and the line, not a traceback.
    broken = tmp_path / "broken"
    broken.write_text(f"{trusted}\n[host]:22 ssh-ed25519 not-base64!\n")
    with pytest.raises(DeviceError, match="broken: line 2: not a known_hosts entry"), \
            SSHAgent(sshd_host.spec("broken", tmp_path / "w3", known_hosts=broken)):
        pass
