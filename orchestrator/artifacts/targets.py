"""What each build target needs: a compiler, an ExecuTorch runtime, cmake arguments.

- `host`: the system C++ compiler against the installed executorch wheel's runtime.
- `linux-aarch64`: Debian's aarch64-linux-gnu-g++ against the aarch64 wheel's runtime,
  downloaded once with `pip download` and cached under `cache_dir("runtimes")`.
- `android-arm64-v8a`: without ANDROID_NDK, the linux-aarch64 runner plus a bundled glibc
  (glibc_bundle.py), started through its own loader; with ANDROID_NDK and EXECUTORCH_SRC,
  the NDK's clang against ExecuTorch built from source (bionic, no loader needed).

Command lines are built by pure functions (`wheel_runner_commands`,
`android_build_commands`) so tests can check them without a toolchain.
No torch or executorch import here: the wheel is located with `find_spec`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.base import cache, procs
from orchestrator.base.errors import BuildError

TARGETS = ("host", "linux-aarch64", "android-arm64-v8a")
ANDROID_TARGET = "android-arm64-v8a"
# Android ABI (`ro.product.cpu.abi`) -> the target whose runner runs there.
ANDROID_ABI_TARGETS = {"arm64-v8a": ANDROID_TARGET}

AARCH64_CXX = "aarch64-linux-gnu-g++"
AARCH64_WHEEL_PLATFORM = "manylinux_2_28_aarch64"
QEMU_AARCH64 = "qemu-aarch64"
QEMU_SYSROOT = "/usr/aarch64-linux-gnu"
ANDROID_ABI = "arm64-v8a"
ANDROID_PLATFORM = "android-26"
PIP_DOWNLOAD_TIMEOUT_S = 1800
VERSION_TIMEOUT_S = 30

# ExecuTorch source-build options for Android: the runtime pieces our runner links
# (module + data loader + tensor extensions, devtools with the event tracer,
# XNNPACK, optimized and quantized kernels, the threadpool). The posix PAL, not
# the android one, so runtime logs reach the adb shell's stderr instead of logcat.
# Program verification on, because the runner loads with InternalConsistency.
ANDROID_EXECUTORCH_OPTIONS: tuple[str, ...] = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_TESTING=OFF",
    "-DEXECUTORCH_BUILD_TESTS=OFF",
    "-DEXECUTORCH_BUILD_EXECUTOR_RUNNER=OFF",
    "-DEXECUTORCH_BUILD_DEVTOOLS=ON",
    "-DEXECUTORCH_ENABLE_EVENT_TRACER=ON",
    "-DEXECUTORCH_BUILD_XNNPACK=ON",
    "-DEXECUTORCH_BUILD_CPUINFO=ON",
    "-DEXECUTORCH_BUILD_PTHREADPOOL=ON",
    "-DEXECUTORCH_BUILD_EXTENSION_MODULE=ON",
    "-DEXECUTORCH_BUILD_EXTENSION_DATA_LOADER=ON",
    "-DEXECUTORCH_BUILD_EXTENSION_FLAT_TENSOR=ON",
    "-DEXECUTORCH_BUILD_EXTENSION_NAMED_DATA_MAP=ON",
    "-DEXECUTORCH_BUILD_EXTENSION_TENSOR=ON",
    "-DEXECUTORCH_BUILD_KERNELS_OPTIMIZED=ON",
    "-DEXECUTORCH_BUILD_KERNELS_QUANTIZED=ON",
    "-DEXECUTORCH_ENABLE_PROGRAM_VERIFICATION=ON",
    "-DEXECUTORCH_ENABLE_LOGGING=ON",
    "-DEXECUTORCH_LOG_LEVEL=Info",
    "-DEXECUTORCH_PAL_DEFAULT=posix",
)


@dataclass(frozen=True)
class Toolchain:
    """A resolved compiler for a target, and how to run its binaries on this host."""

    target: str
    cxx: str
    identity: str  # compiler path + version text (or NDK revision): part of the cache key
    cmake_args: tuple[str, ...]
    emulator: tuple[str, ...] | None  # () runs natively, None: cannot run here


def executorch_version() -> str:
    """Installed executorch version (e.g. "1.5.1"), read from metadata without importing it."""
    try:
        return importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        raise BuildError("executorch is not installed in this Python environment (pip install executorch)") from None


def host_executorch_dir() -> Path:
    """Root of the installed executorch wheel (holds lib/, include/, share/cmake/)."""
    spec = importlib.util.find_spec("executorch")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        root = Path(location)
        if (root / "share" / "cmake" / "executorch-config.cmake").is_file():
            return root
    raise BuildError(f"the installed executorch wheel ships no C++ runtime (looked in {', '.join(locations) or 'nowhere'})")


def runtimes_platform_dir(version: str, platform: str = AARCH64_WHEEL_PLATFORM) -> Path:
    return cache.cache_dir("runtimes") / f"executorch-{version}-{platform}"


def aarch64_runtime(version: str, log: Callable[[str], None]) -> Path:
    """The aarch64 wheel's runtime (lib/, include/, share/), downloaded once per version."""
    final = runtimes_platform_dir(version)
    root = final / "executorch"
    if (final / "runtime.json").is_file():
        return root
    log(f"downloading the ExecuTorch {version} runtime for {AARCH64_WHEEL_PLATFORM}")
    staging = cache.staging_dir("runtimes")
    try:
        wheel_dir = staging / "wheel"
        argv = [
            sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
            "--no-deps", "--only-binary=:all:", "--platform", AARCH64_WHEEL_PLATFORM,
            "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}",
            f"executorch=={version.split('+')[0]}", "-d", str(wheel_dir),
        ]
        result = procs.run(argv, timeout_s=PIP_DOWNLOAD_TIMEOUT_S)
        if not result.ok:
            raise BuildError(failure_message("pip download of the aarch64 runtime", result))
        wheels = sorted(wheel_dir.glob("executorch-*.whl"))
        if not wheels:
            raise BuildError(f"pip download left no executorch wheel in {wheel_dir}")
        _extract_runtime(wheels[0], staging)
        cache.write_json_atomic(staging / "runtime.json", {"wheel": wheels[0].name, "sha256": cache.sha256_file(wheels[0]),
                                                           "platform": AARCH64_WHEEL_PLATFORM})
        shutil.rmtree(wheel_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    cache.publish_dir(staging, final)
    return root


def _extract_runtime(wheel: Path, dest: Path) -> None:
    """Only the C++ runtime members; the Python half of the wheel is not needed."""
    wanted = ("executorch/lib/", "executorch/include/", "executorch/share/")
    with zipfile.ZipFile(wheel) as zf:
        for member in zf.infolist():
            if member.filename.startswith(wanted) and ".." not in Path(member.filename).parts:
                zf.extract(member, dest)
    if not (dest / "executorch" / "share" / "cmake" / "executorch-config.cmake").is_file():
        raise BuildError(f"{wheel.name} carries no C++ runtime (no share/cmake/executorch-config.cmake)")


def compiler_identity(cxx: str) -> str:
    result = procs.run([cxx, "--version"], timeout_s=VERSION_TIMEOUT_S)
    if not result.ok:
        raise BuildError(failure_message(f"{cxx} --version", result))
    return f"{cxx}\n{result.stdout.strip()}"


def host_toolchain() -> Toolchain:
    cxx = os.environ.get("CXX") or _which_any("c++", "g++", "clang++")
    if not cxx:
        raise BuildError("host needs a C++ compiler (set CXX, or install g++)")
    cxx = str(procs.which(cxx) or cxx)
    return Toolchain("host", cxx, compiler_identity(cxx), (), ())


def aarch64_toolchain(runners: Path) -> Toolchain:
    cxx = procs.which(AARCH64_CXX)
    if cxx is None:
        raise BuildError(f"linux-aarch64 needs {AARCH64_CXX} (Debian package g++-aarch64-linux-gnu)")
    args = (f"-DCMAKE_TOOLCHAIN_FILE={runners / 'toolchains' / 'linux-aarch64.cmake'}",)
    qemu = procs.which(QEMU_AARCH64)
    emulator = (str(qemu), "-L", QEMU_SYSROOT) if qemu and Path(QEMU_SYSROOT).is_dir() else None
    return Toolchain("linux-aarch64", str(cxx), compiler_identity(str(cxx)), args, emulator)


@dataclass(frozen=True)
class AndroidInputs:
    ndk: Path
    src: Path
    identity: str  # NDK revision + ExecuTorch source revision: the runtime cache key


def target_for_abi(abi: str) -> str | None:
    """The target whose runner runs on an Android device of this ABI (`ro.product.cpu.abi`); None: none does."""
    return ANDROID_ABI_TARGETS.get(abi.strip())


def android_ndk(ndk: Path | None = None) -> Path | None:
    """The NDK to build with: `ndk`, else $ANDROID_NDK (or _HOME, _ROOT); None picks the bundled-glibc route."""
    return ndk or _env_path("ANDROID_NDK", "ANDROID_NDK_HOME", "ANDROID_NDK_ROOT")


def check_ndk(ndk: Path) -> str:
    """The NDK's identity (path + source.properties); BuildError when `ndk` is not an NDK."""
    if not android_toolchain_file(ndk).is_file():
        raise BuildError(f"ANDROID_NDK={ndk} is not an NDK: {android_toolchain_file(ndk)} is missing")
    props = ndk / "source.properties"
    return f"ndk={ndk}\n{props.read_text(errors='replace') if props.is_file() else ''}"


def android_inputs(ndk: Path | None, src: Path | None) -> AndroidInputs:
    """Check ANDROID_NDK and the ExecuTorch source tree; a clear BuildError when absent."""
    ndk = android_ndk(ndk)
    src = src or _env_path("EXECUTORCH_SRC")
    if ndk is None or src is None:
        missing = [name for name, value in (("ANDROID_NDK", ndk), ("EXECUTORCH_SRC", src)) if value is None]
        raise BuildError(
            "android-arm64-v8a with an NDK needs ANDROID_NDK (an Android NDK, r26 or newer) and EXECUTORCH_SRC "
            "(an ExecuTorch source checkout with submodules, at the version used for export); "
            f"not set: {', '.join(missing)} (unset ANDROID_NDK to use the bundled glibc runtime instead)"
        )
    ndk_identity = check_ndk(ndk)
    if not (src / "CMakeLists.txt").is_file() or not (src / "runtime").is_dir():
        raise BuildError(f"EXECUTORCH_SRC={src} is not an ExecuTorch source tree (no CMakeLists.txt and runtime/)")
    version_file = src / "version.txt"
    src_rev = version_file.read_text().strip() if version_file.is_file() else ""
    head = procs.run(["git", "-C", str(src), "rev-parse", "HEAD"], timeout_s=VERSION_TIMEOUT_S) if procs.which("git") else None
    if head is not None and head.ok:
        src_rev += "@" + head.stdout.strip()
    return AndroidInputs(ndk, src, f"{ndk_identity}\nsrc={src}\n{src_rev}")


def android_toolchain_file(ndk: Path) -> Path:
    return ndk / "build" / "cmake" / "android.toolchain.cmake"


def android_common_args(ndk: Path) -> list[str]:
    return [
        f"-DCMAKE_TOOLCHAIN_FILE={android_toolchain_file(ndk)}",
        f"-DANDROID_ABI={ANDROID_ABI}",
        f"-DANDROID_PLATFORM={ANDROID_PLATFORM}",
    ]


def android_runtime_commands(ndk: Path, src: Path, prefix: Path, build_dir: Path, jobs: int = 2) -> list[list[str]]:
    """Configure, build and install ExecuTorch from source for arm64-v8a into `prefix`."""
    return [
        ["cmake", "-S", str(src), "-B", str(build_dir), *android_common_args(ndk),
         f"-DCMAKE_INSTALL_PREFIX={prefix}", f"-DPYTHON_EXECUTABLE={sys.executable}", *ANDROID_EXECUTORCH_OPTIONS],
        ["cmake", "--build", str(build_dir), "--parallel", str(jobs)],
        ["cmake", "--install", str(build_dir)],
    ]


def android_runner_commands(ndk: Path, prefix: Path, runners: Path, build_dir: Path, install_root: Path,
                            jobs: int = 2, executorch_dir: Path | None = None,
                            extra: Sequence[str] = ()) -> list[list[str]]:
    """Configure, build and install our runner against an ExecuTorch install `prefix`."""
    return [
        ["cmake", "-S", str(runners), "-B", str(build_dir), *android_common_args(ndk),
         "-DCMAKE_BUILD_TYPE=Release",
         f"-Dexecutorch_DIR={executorch_dir or prefix / 'lib' / 'cmake' / 'ExecuTorch'}",
         f"-DCMAKE_FIND_ROOT_PATH={prefix}",
         # the NDK toolchain confines package lookups to its sysroot otherwise
         "-DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=BOTH",
         f"-DCMAKE_INSTALL_PREFIX={install_root}", *extra],
        ["cmake", "--build", str(build_dir), "--parallel", str(jobs)],
        ["cmake", "--install", str(build_dir)],
    ]


def android_build_commands(ndk: Path, src: Path, prefix: Path, build_dir: Path, *, runners: Path,
                           install_root: Path, jobs: int = 2) -> list[list[str]]:
    """Every command of a full Android build: ExecuTorch into `prefix`, then the runner."""
    return [
        *android_runtime_commands(ndk, src, prefix, build_dir / "executorch", jobs),
        *android_runner_commands(ndk, prefix, runners, build_dir / "runner", install_root, jobs),
    ]


def wheel_runner_commands(runners: Path, build_dir: Path, install_root: Path, executorch_root: Path,
                          toolchain: Toolchain, jobs: int = 2, generator: str | None = None) -> list[list[str]]:
    """Configure, build and install the runner against a wheel's runtime (host, aarch64)."""
    return runner_commands(runners, build_dir, install_root, (f"-Dexecutorch_DIR={executorch_root / 'share' / 'cmake'}",),
                           toolchain, jobs, generator)


def runner_commands(runners: Path, build_dir: Path, install_root: Path, executorch_args: Sequence[str],
                    toolchain: Toolchain, jobs: int = 2, generator: str | None = None) -> list[list[str]]:
    """Configure, build and install the runner with `toolchain` against the runtime `executorch_args` name."""
    configure = ["cmake", "-S", str(runners), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                 f"-DCMAKE_CXX_COMPILER={toolchain.cxx}", *executorch_args,
                 f"-DCMAKE_INSTALL_PREFIX={install_root}", *toolchain.cmake_args]
    if generator:
        configure += ["-G", generator]
    return [configure, ["cmake", "--build", str(build_dir), "--parallel", str(jobs)], ["cmake", "--install", str(build_dir)]]


def android_runtime_json(prefix: Path) -> Path:
    return prefix / "etfarm-runtime.json"


def write_android_marker(prefix: Path, inputs: AndroidInputs) -> None:
    android_runtime_json(prefix).write_text(json.dumps({"identity": inputs.identity}, indent=2))


def failure_message(what: str, result: procs.CommandResult) -> str:
    """What failed, how, the command line and the tail of its output."""
    status = "timed out" if result.timed_out else f"exited {result.exit_code}"
    return f"{what} {status}\n$ {result.command}\n{result.tail(2000).rstrip()}"


def _which_any(*names: str) -> str | None:
    for name in names:
        if procs.which(name):
            return name
    return None


def _env_path(*names: str) -> Path | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return Path(value).expanduser()
    return None
