"""An emulated device's machine read through its qemu prefix, or the host's marked as the host's (device_agents/emulated.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from device_agents import DeviceSpec
from device_agents.emulated import HOST_MARK, emulated_facts, loader_path
from device_agents.facts import DeviceFacts
from orchestrator.base.procs import CommandResult

DIAGNOSTICS = 'uname.sysname="Linux"\nuname.machine="aarch64"\nuname.release="6.1"\n'


@dataclass
class FakeAgent:
    spec: DeviceSpec
    stdout: str = DIAGNOSTICS
    exit_code: int = 0
    calls: list[tuple[list[str], dict[str, Any]]] = field(default_factory=list)

    def run(self, argv: list[str], **kwargs: Any) -> CommandResult:
        self.calls.append((list(argv), kwargs))
        return CommandResult("cmd", self.exit_code, self.stdout, "", 0.1)


def board(emulated: bool = True, prefix: tuple[str, ...] = ("qemu-aarch64", "-cpu", "cortex-a76", "-L", "/sysroot"),
          target: str = "linux-aarch64") -> DeviceSpec:
    return DeviceSpec("rpi5", target=target, workdir="/w", exec_prefix=prefix, emulated=emulated)


HOST = DeviceFacts.parse("os=Linux\nabi=x86_64\ncores=2\n")


def test_the_loader_is_found_below_qemus_sysroot_or_at_its_own_path() -> None:
    assert loader_path(("qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"), "linux-aarch64") == \
        "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1"
    assert loader_path(("qemu-aarch64",), "linux-aarch64") == "/lib/ld-linux-aarch64.so.1"
    assert loader_path(("qemu-aarch64",), "android-arm64") is None


def test_the_machine_read_through_the_prefix_replaces_the_hosts() -> None:
    agent = FakeAgent(board())
    facts = emulated_facts(agent, HOST)  # type: ignore[arg-type]
    assert facts.abi == "aarch64" and facts.cores == 2 and facts.os == "Linux"
    (argv, kwargs), = agent.calls
    assert argv == ["/sysroot/lib/ld-linux-aarch64.so.1", "--list-diagnostics"] and kwargs["use_exec_prefix"] is True


def test_an_unreadable_machine_leaves_the_hosts_marked_as_such() -> None:
    for agent in (FakeAgent(board(), exit_code=127), FakeAgent(board(), stdout="usage: ld.so ...\n"),
                  FakeAgent(board(prefix=("env", "QEMU_CPU=cortex-a76"), target="android-arm64-v8a")),
                  FakeAgent(board(), stdout='uname.machine="a b; rm -rf"\n')):
        facts = emulated_facts(agent, HOST)  # type: ignore[arg-type]
        assert facts.abi == f"x86_64{HOST_MARK}", agent
        assert emulated_facts(agent, facts).abi == facts.abi  # type: ignore[arg-type]  # marked once


def test_a_device_that_is_not_emulated_or_says_its_targets_machine_is_not_asked() -> None:
    agent = FakeAgent(board(emulated=False))
    assert emulated_facts(agent, HOST) is HOST  # type: ignore[arg-type]
    own = DeviceFacts.parse("os=Linux\nabi=aarch64\ncores=9\n")  # the emulated phone's own uname: busybox's
    phone = FakeAgent(board(prefix=("env", "QEMU_CPU=cortex-a76"), target="android-arm64-v8a"))
    assert emulated_facts(phone, own) is own  # type: ignore[arg-type]
    assert agent.calls == [] == phone.calls


def test_facts_without_an_abi_are_not_asked_about() -> None:
    """A warm process run's facts hold no static ones: nothing to correct, no extra command under qemu."""
    warm = DeviceFacts.parse("cores=2\nloadavg=0.1 0.2 0.3\n")
    agent = FakeAgent(board())
    assert emulated_facts(agent, warm) is warm and agent.calls == []  # type: ignore[arg-type]
