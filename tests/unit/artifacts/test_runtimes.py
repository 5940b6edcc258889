"""The runtime routes of orchestrator.artifacts.build without compilers: bundled glibc, the user's own prefix.

procs.run is faked (tests/unit/artifacts/test_build.py's FakeProcs); ELF reading is faked by a table
of NEEDED entries, so the closure logic is checked on its own (the real one: tests/integration/test_android.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrator.artifacts import build, glibc_bundle, targets, user_runtime
from orchestrator.artifacts.targets import Toolchain
from orchestrator.base.errors import BuildError, UsageError
from tests.unit.artifacts.test_build import env  # noqa: F401  (the fixture)

ANDROID = "android-arm64-v8a"
GLIBC = {
    "ld-linux-aarch64.so.1": (),
    "libc.so.6": ("ld-linux-aarch64.so.1",),
    "libm.so.6": ("libc.so.6",),
    "libstdc++.so.6": ("libm.so.6", "libc.so.6", "libgcc_s.so.1"),
    "libgcc_s.so.1": ("libc.so.6",),
    "libpthread.so.0": ("libc.so.6",),
}


@pytest.fixture
def sysroot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake cross sysroot; elf_deps answers from GLIBC, the runner and libexecutorch*.so from fixed lists."""
    root = tmp_path / "sysroot"
    root.mkdir()
    for name in (*GLIBC, "libunused.so.1"):
        (root / name).write_bytes(f"elf {name}".encode())

    def fake_deps(path: Path) -> glibc_bundle.ElfDeps:
        if path.name == "etfarm_runner":
            return glibc_bundle.ElfDeps("/lib/ld-linux-aarch64.so.1", ("libexecutorch.so", "libstdc++.so.6", "libc.so.6"))
        if path.name.startswith("libexecutorch"):
            return glibc_bundle.ElfDeps("", ("libpthread.so.0", "libc.so.6"))
        return glibc_bundle.ElfDeps("", GLIBC[path.name])

    monkeypatch.setattr(glibc_bundle, "elf_deps", fake_deps)
    monkeypatch.setattr(build, "glibc_bundle", lambda runner, libs: glibc_bundle.glibc_bundle(runner, libs, root))
    return root


@pytest.fixture
def no_ndk(env: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:  # noqa: F811
    for name in ("ANDROID_NDK", "ANDROID_NDK_HOME", "ANDROID_NDK_ROOT", "EXECUTORCH_SRC"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(targets, "aarch64_toolchain", lambda runners: Toolchain("linux-aarch64", "/usr/bin/aarch64-linux-gnu-g++",
                                                                               "aarch64 g++ 12", (), None))
    monkeypatch.setattr(targets, "aarch64_runtime", lambda version, log: tmp_path / "aarch64-wheel" / "executorch")
    monkeypatch.setattr(build.procs, "which", lambda name: None if name == "qemu-aarch64" else Path(f"/usr/bin/{name}"))
    return env


def test_closure_follows_needed_from_the_runner_and_its_libs(tmp_path: Path, sysroot: Path) -> None:
    runner = tmp_path / "etfarm_runner"
    lib = tmp_path / "libexecutorch.so"
    bundle = glibc_bundle.glibc_bundle(runner, [lib], sysroot)
    assert bundle.loader == "ld-linux-aarch64.so.1"
    assert set(bundle.names) == set(GLIBC), "every NEEDED reached, nothing else (libunused.so.1), not the build's own libs"
    assert bundle.launcher() == ("./lib/ld-linux-aarch64.so.1", "--library-path", "./lib")
    (sysroot / "libm.so.6").write_bytes(b"a newer libm")
    assert glibc_bundle.glibc_bundle(runner, [lib], sysroot).identity != bundle.identity, "the key covers the libc's content"


def test_a_needed_library_missing_everywhere_is_named(tmp_path: Path, sysroot: Path) -> None:
    (sysroot / "libgcc_s.so.1").unlink()
    with pytest.raises(BuildError, match=r"needs libgcc_s\.so\.1, which neither its build nor .*sysroot has"):
        glibc_bundle.glibc_bundle(tmp_path / "etfarm_runner", [tmp_path / "libexecutorch.so"], sysroot)


def test_android_without_ndk_bundles_glibc_on_the_aarch64_build(no_ndk: dict[str, Any], sysroot: Path) -> None:
    result = build.build_runner(ANDROID)
    assert result.target == ANDROID and result.runtime == "bundled-glibc" and not result.cached
    assert set(result.bundled) == set(GLIBC)
    staged = result.stage_files()
    assert {"bin/etfarm_runner", "lib/libexecutorch.so", "lib/ld-linux-aarch64.so.1", "lib/libstdc++.so.6"} <= set(staged)
    assert (result.root / "lib" / "ld-linux-aarch64.so.1").stat().st_mode & 0o111, "the loader is run: executable"
    assert result.start_words("/data/local/tmp/etfarm/") == [
        "/data/local/tmp/etfarm/lib/ld-linux-aarch64.so.1", "--library-path", "/data/local/tmp/etfarm/lib",
        "/data/local/tmp/etfarm/bin/etfarm_runner"]
    assert result.env("/data/local/tmp/etfarm") == {}, "the loader is told --library-path; no LD_LIBRARY_PATH"
    info = build.read_build_info(result)
    assert info["glibc_sysroot"] == str(sysroot) and info["executorch_dir"].endswith("aarch64-wheel/executorch/share/cmake")

    no_ndk["fake"].calls.clear()
    again = build.build_runner(ANDROID)
    assert again.cached and again.key == result.key and no_ndk["fake"].calls == []
    (sysroot / "libc.so.6").write_bytes(b"glibc 2.37")
    assert build.build_runner(ANDROID).key != result.key, "another libc is another build"


def test_wheel_builds_run_the_runner_directly(tmp_path: Path) -> None:
    rb = build.RunnerBuild("linux-aarch64", "k", tmp_path, tmp_path / "bin" / "etfarm_runner", (), cached=True)
    assert rb.start_words("/tmp/w") == ["/tmp/w/bin/etfarm_runner"]
    assert rb.env("/tmp/w") == {"LD_LIBRARY_PATH": "/tmp/w/lib"} and rb.runtime == "wheel"


def test_abi_to_target() -> None:
    assert targets.target_for_abi("arm64-v8a\n") == ANDROID
    assert targets.target_for_abi("armeabi-v7a") is None and targets.target_for_abi("x86_64") is None


def _wheel_prefix(root: Path) -> Path:
    (root / "share" / "cmake").mkdir(parents=True)
    (root / "share" / "cmake" / "executorch-config.cmake").write_text("# wheel\n")
    (root / "lib").mkdir()
    (root / "lib" / "libexecutorch.so").write_text("v1")
    return root


def test_user_runtime_prefix_shapes(tmp_path: Path) -> None:
    wheel = user_runtime.user_runtime(_wheel_prefix(tmp_path / "wheel"))
    assert wheel.executorch_dir == (tmp_path / "wheel" / "share" / "cmake").resolve() and not wheel.source_install
    assert "-DETFARM_ALL_BACKENDS=ON" in wheel.cmake_args()
    source = tmp_path / "src-install"
    (source / "lib" / "cmake" / "ExecuTorch").mkdir(parents=True)
    (source / "lib" / "cmake" / "ExecuTorch" / "executorch-config.cmake").write_text("# source\n")
    installed = user_runtime.user_runtime(source)
    assert installed.source_install and f"-DCMAKE_FIND_ROOT_PATH={source.resolve()}" in installed.cmake_args()
    with pytest.raises(UsageError, match="is not an ExecuTorch CMake install prefix"):
        user_runtime.user_runtime(tmp_path)
    with pytest.raises(UsageError, match="no such directory"):
        user_runtime.user_runtime(tmp_path / "missing")


def test_user_runtime_builds_against_the_prefix(env: dict[str, Any], tmp_path: Path) -> None:  # noqa: F811
    prefix = _wheel_prefix(tmp_path / "mine")
    result = build.build_runner("host", runtime=prefix)
    configure = next(c for c in env["fake"].cmake_calls() if c[1] == "-S")
    assert f"-Dexecutorch_DIR={prefix.resolve()}/share/cmake" in configure and "-DETFARM_ALL_BACKENDS=ON" in configure
    assert result.runtime == "user" and result.executorch_dir == f"{prefix.resolve()}/share/cmake"
    assert result.key != build.build_runner("host").key, "the wheel's build is another build"
    (prefix / "lib" / "libexecutorch.so").write_text("v2, rebuilt")
    assert build.build_runner("host", runtime=prefix).key != result.key, "a rebuilt runtime is another build"


def test_user_runtime_with_an_ndk_needs_no_executorch_source(env: dict[str, Any], tmp_path: Path,  # noqa: F811
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EXECUTORCH_SRC", raising=False)
    ndk = tmp_path / "ndk"
    targets.android_toolchain_file(ndk).parent.mkdir(parents=True)
    targets.android_toolchain_file(ndk).write_text("")
    prefix = tmp_path / "qnn-install"
    (prefix / "lib" / "cmake" / "ExecuTorch").mkdir(parents=True)
    (prefix / "lib" / "cmake" / "ExecuTorch" / "executorch-config.cmake").write_text("# source install\n")
    result = build.build_runner(ANDROID, android_ndk=ndk, runtime=prefix)
    configures = [c for c in env["fake"].cmake_calls() if c[1] == "-S"]
    assert [c[2] for c in configures] == [str(env["runners"])], "only the runner is built: the runtime is the user's"
    assert f"-Dexecutorch_DIR={prefix.resolve()}/lib/cmake/ExecuTorch" in configures[0]
    assert "-DETFARM_ALL_BACKENDS=ON" in configures[0] and "-DANDROID_ABI=arm64-v8a" in configures[0]
    assert result.runtime == "user" and result.launcher == () and result.bundled == ()
