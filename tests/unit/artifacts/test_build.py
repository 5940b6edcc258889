"""orchestrator.artifacts.build / orchestrator.artifacts.targets without compilers: procs.run is faked."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from orchestrator.artifacts import build, targets
from orchestrator.artifacts.targets import Toolchain
from orchestrator.base import procs
from orchestrator.base.errors import BuildError, UsageError
from orchestrator.base.procs import CommandResult

REPO_RUNNERS = Path(__file__).resolve().parents[3] / "runners"


class FakeProcs:
    """Stands in for procs.run: records argv, fakes `cmake --install` and failures."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.fail_on: str | None = None  # substring of the argv to fail
        self.prefixes: dict[str, Path] = {}

    def __call__(self, argv: Sequence[Any], **_: Any) -> CommandResult:
        args = tuple(str(a) for a in argv)
        self.calls.append(args)
        if self.fail_on and self.fail_on in " ".join(args):
            return CommandResult(" ".join(map(str, args)), 2, "", "ninja: error: something broke at line 42\n", 0.1)
        if args[:2] == ("cmake", "-S"):
            build_dir = args[args.index("-B") + 1]
            prefix = next(a.split("=", 1)[1] for a in args if a.startswith("-DCMAKE_INSTALL_PREFIX="))
            self.prefixes[build_dir] = Path(prefix)
        if args[:2] == ("cmake", "--install"):
            prefix = self.prefixes[args[2]]
            (prefix / "bin").mkdir(parents=True, exist_ok=True)
            (prefix / "bin" / "etfarm_runner").write_text("#!fake\n")
            (prefix / "lib").mkdir(exist_ok=True)
            (prefix / "lib" / "libexecutorch.so").write_text("fake")
        return CommandResult(" ".join(map(str, args)), 0, "ok\n", "", 0.1)

    def cmake_calls(self) -> list[tuple[str, ...]]:
        return [c for c in self.calls if c[0] == "cmake"]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A private cache and runners/ copy, a fixed host toolchain and version, faked procs."""
    monkeypatch.setenv("ETFARM_CACHE_DIR", str(tmp_path / "cache"))
    runners = tmp_path / "runners"
    shutil.copytree(REPO_RUNNERS, runners)
    monkeypatch.setattr(build, "resource_dir", lambda name: runners)
    state: dict[str, Any] = {"version": "1.5.1", "compiler": "/usr/bin/c++\ng++ 12.2"}
    monkeypatch.setattr(targets, "executorch_version", lambda: state["version"])
    monkeypatch.setattr(targets, "host_executorch_dir", lambda: tmp_path / "wheel" / "executorch")
    monkeypatch.setattr(targets, "host_toolchain", lambda: Toolchain("host", "/usr/bin/c++", state["compiler"], (), ()))
    fake = FakeProcs()
    monkeypatch.setattr(procs, "run", fake)
    monkeypatch.setattr(procs, "which", lambda name: Path(f"/usr/bin/{name}"))
    state.update(runners=runners, fake=fake, cache=tmp_path / "cache")
    return state


def test_warm_build_is_cached_and_runs_no_cmake(env: dict[str, Any]) -> None:
    first = build.build_runner("host")
    assert not first.cached and first.runner.is_file()
    assert first.root.parent == env["cache"] / "builds"
    assert [c[1] for c in env["fake"].cmake_calls()] == ["-S", "--build", "--install"]
    env["fake"].calls.clear()
    second = build.build_runner("host")
    assert second.cached and second.root == first.root and second.key == first.key
    assert env["fake"].calls == []
    assert not list((env["cache"] / "builds").glob(".tmp-*")), "staging dirs must not be left behind"


def test_key_changes_with_sources_version_and_compiler_only(env: dict[str, Any]) -> None:
    key = build.build_runner("host").key
    assert build.build_runner("host").key == key  # nothing changed
    (env["runners"] / ".editor-swap").write_text("ignored")  # hidden files are not sources
    assert build.build_runner("host").key == key
    cpp = env["runners"] / "etfarm_runner.cpp"
    cpp.write_text(cpp.read_text() + "\n// changed\n")
    key_src = build.build_runner("host").key
    assert key_src != key
    env["version"] = "1.6.0"
    key_ver = build.build_runner("host").key
    assert key_ver not in (key, key_src)
    env["compiler"] = "/usr/bin/c++\ng++ 13.1"
    assert build.build_runner("host").key not in (key, key_src, key_ver)


def test_build_key_is_a_pure_function_of_its_inputs() -> None:
    base = ("host", "gcc 12", "src1", "1.5.1", ("Release",))
    assert build.build_key(*base) == build.build_key(*base)
    for i, changed in enumerate(("linux-aarch64", "gcc 13", "src2", "1.5.2", ("Debug",))):
        args = list(base)
        args[i] = changed
        assert build.build_key(*args) != build.build_key(*base), f"argument {i} must change the key"


def test_sources_digest_covers_nested_files(tmp_path: Path) -> None:
    (tmp_path / "toolchains").mkdir()
    (tmp_path / "a.cpp").write_text("a")
    (tmp_path / "toolchains" / "x.cmake").write_text("x")
    before = build.sources_digest(tmp_path)
    (tmp_path / "toolchains" / "x.cmake").write_text("y")
    assert build.sources_digest(tmp_path) != before


def test_force_rebuilds_in_place(env: dict[str, Any]) -> None:
    first = build.build_runner("host")
    env["fake"].calls.clear()
    again = build.build_runner("host", force=True)
    assert not again.cached and again.root == first.root and again.runner.is_file()
    assert env["fake"].cmake_calls()


def test_failed_step_names_command_and_output_tail(env: dict[str, Any]) -> None:
    env["fake"].fail_on = "--build"
    with pytest.raises(BuildError) as err:
        build.build_runner("host")
    message = str(err.value)
    assert "cmake build" in message and "exited 2" in message
    assert "$ cmake --build" in message and "something broke at line 42" in message
    assert not list((env["cache"] / "builds").glob(".tmp-*"))
    assert not list((env["cache"] / "builds").glob("host-*")), "a failed build must not be published"


def test_missing_cmake_is_a_build_error(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "which", lambda name: None if name == "cmake" else Path(f"/usr/bin/{name}"))
    with pytest.raises(BuildError, match="cmake not found"):
        build.build_runner("host")


def test_missing_cross_compiler_is_a_build_error(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procs, "which", lambda name: None)
    with pytest.raises(BuildError, match="aarch64-linux-gnu-g\\+\\+.*g\\+\\+-aarch64-linux-gnu"):
        build.build_runner("linux-aarch64")


def test_unknown_target_names_known_targets() -> None:
    with pytest.raises(UsageError) as err:
        build.build_runner("windows-x86")
    for target in build.TARGETS:
        assert target in str(err.value)
    assert "windows-x86" in str(err.value)


def test_ndk_without_source_is_a_clear_error(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("EXECUTORCH_SRC", raising=False)
    ndk = tmp_path / "ndk"
    targets.android_toolchain_file(ndk).parent.mkdir(parents=True)
    targets.android_toolchain_file(ndk).write_text("")
    with pytest.raises(BuildError) as err:
        build.build_runner("android-arm64-v8a", android_ndk=ndk)
    assert "needs ANDROID_NDK" in str(err.value) and "not set: EXECUTORCH_SRC" in str(err.value)
    assert "unset ANDROID_NDK to use the bundled glibc runtime" in str(err.value)
    assert env["fake"].calls == []


def test_ndk_path_that_is_not_an_ndk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANDROID_NDK", str(tmp_path / "not-ndk"))
    monkeypatch.setenv("EXECUTORCH_SRC", str(tmp_path))
    with pytest.raises(BuildError, match="is not an NDK"):
        targets.android_inputs(None, None)


def test_android_commands(tmp_path: Path) -> None:
    ndk, src, prefix, work = tmp_path / "ndk", tmp_path / "et", tmp_path / "prefix", tmp_path / "work"
    commands = targets.android_build_commands(ndk, src, prefix, work, runners=REPO_RUNNERS, install_root=tmp_path / "out", jobs=2)
    assert [c[:2] for c in commands] == [["cmake", "-S"], ["cmake", "--build"], ["cmake", "--install"]] * 2
    et_configure, runner_configure = commands[0], commands[3]
    for configure in (et_configure, runner_configure):
        assert f"-DCMAKE_TOOLCHAIN_FILE={ndk}/build/cmake/android.toolchain.cmake" in configure
        assert "-DANDROID_ABI=arm64-v8a" in configure
        assert "-DANDROID_PLATFORM=android-26" in configure
    assert et_configure[2] == str(src)
    assert f"-DCMAKE_INSTALL_PREFIX={prefix}" in et_configure
    for option in ("EXECUTORCH_BUILD_DEVTOOLS", "EXECUTORCH_ENABLE_EVENT_TRACER", "EXECUTORCH_BUILD_XNNPACK",
                   "EXECUTORCH_BUILD_EXTENSION_MODULE", "EXECUTORCH_BUILD_EXTENSION_DATA_LOADER",
                   "EXECUTORCH_BUILD_EXTENSION_TENSOR", "EXECUTORCH_BUILD_KERNELS_OPTIMIZED"):
        assert f"-D{option}=ON" in et_configure, option
    assert runner_configure[2] == str(REPO_RUNNERS)
    assert f"-Dexecutorch_DIR={prefix}/lib/cmake/ExecuTorch" in runner_configure
    assert f"-DCMAKE_INSTALL_PREFIX={tmp_path / 'out'}" in runner_configure
    assert commands[1][-2:] == ["--parallel", "2"]


def test_android_build_uses_the_source_runtime(tmp_path: Path, env: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    ndk, src = tmp_path / "ndk", tmp_path / "et"
    targets.android_toolchain_file(ndk).parent.mkdir(parents=True)
    targets.android_toolchain_file(ndk).write_text("")
    (ndk / "source.properties").write_text("Pkg.Revision = 27.0.1\n")
    (src / "runtime").mkdir(parents=True)
    (src / "CMakeLists.txt").write_text("")
    result = build.build_runner("android-arm64-v8a", android_ndk=ndk, executorch_src=src)
    configures = [c for c in env["fake"].cmake_calls() if c[1] == "-S"]
    assert [c[2] for c in configures] == [str(src), str(env["runners"])]
    assert result.runner.is_file() and result.target == "android-arm64-v8a"
    env["fake"].calls.clear()
    (env["runners"] / "etfarm_runner.cpp").write_text("// new runner\n")
    build.build_runner("android-arm64-v8a", android_ndk=ndk, executorch_src=src)
    configures = [c for c in env["fake"].cmake_calls() if c[1] == "-S"]
    assert [c[2] for c in configures] == [str(env["runners"])], "the ExecuTorch runtime is cached separately"


def test_aarch64_commands_use_the_toolchain_file(tmp_path: Path) -> None:
    toolchain = Toolchain("linux-aarch64", "/usr/bin/aarch64-linux-gnu-g++", "id",
                          (f"-DCMAKE_TOOLCHAIN_FILE={REPO_RUNNERS}/toolchains/linux-aarch64.cmake",), None)
    configure, build_cmd, install = targets.wheel_runner_commands(REPO_RUNNERS, tmp_path / "b", tmp_path / "r", tmp_path / "et", toolchain, jobs=2)
    assert "-DCMAKE_CXX_COMPILER=/usr/bin/aarch64-linux-gnu-g++" in configure
    assert f"-Dexecutorch_DIR={tmp_path / 'et'}/share/cmake" in configure
    assert any(a.endswith("toolchains/linux-aarch64.cmake") for a in configure)
    assert (REPO_RUNNERS / "toolchains" / "linux-aarch64.cmake").is_file()
    assert build_cmd[:2] == ["cmake", "--build"] and install[:2] == ["cmake", "--install"]


def test_stage_files_and_runner_env(tmp_path: Path) -> None:
    libs = (tmp_path / "lib" / "libexecutorch.so", tmp_path / "lib" / "libexecutorch_etdump.so")
    rb = build.RunnerBuild("host", "k", tmp_path, tmp_path / "bin" / "etfarm_runner", libs, cached=True)
    assert rb.stage_files() == {"bin/etfarm_runner": rb.runner, "lib/libexecutorch.so": libs[0],
                                "lib/libexecutorch_etdump.so": libs[1]}
    assert build.runner_env("/data/local/tmp/etfarm/") == {"LD_LIBRARY_PATH": "/data/local/tmp/etfarm/lib"}
