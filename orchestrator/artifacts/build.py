"""Build the C++ runner (runners/) for a target, cached by content.

A build lives in `cache_dir("builds")/<target>-<key>/`:

    bin/etfarm_runner      RUNPATH $ORIGIN/../lib
    lib/*.so*              the ExecuTorch runtime libraries it needs (none for an NDK build:
                           static), and for `bundled-glibc` the glibc loader and libraries
    build.json             what it was built from, which runtime, how to start it

so the directory is self-contained and is pushed to a device as is. The key hashes
the target, the toolchain identity (compiler path + `--version`, or NDK revision),
every file under runners/, the ExecuTorch runtime identity and the build options; a
warm call runs no cmake and returns `cached=True`. Builds happen in a staging dir
that is published with one rename, so concurrent builders never see a partial one.

Runtimes (`RunnerBuild.runtime`): `wheel` (host, linux-aarch64: the executorch wheel's
runtime), `bundled-glibc` (android-arm64-v8a without ANDROID_NDK: the linux-aarch64 build
plus the glibc it needs, started through its own loader: `RunnerBuild.launcher`), `ndk`
(ANDROID_NDK + EXECUTORCH_SRC: ExecuTorch built from source), `user` (`runtime=PREFIX`: the
user's own ExecuTorch install, every backend and kernel library it offers linked).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.artifacts import targets
from orchestrator.artifacts.glibc_bundle import glibc_bundle
from orchestrator.artifacts.runner_info import (
    RUNTIME_BUNDLED_GLIBC,
    RUNTIME_NDK,
    RUNTIME_USER,
    RUNTIME_WHEEL,
    RuntimeInfo,
    runner_slot,
)
from orchestrator.artifacts.targets import ANDROID_TARGET, TARGETS, Toolchain
from orchestrator.artifacts.user_runtime import USER_BUILD_OPTIONS, UserRuntime, user_runtime
from orchestrator.base import cache, procs
from orchestrator.base.errors import BuildError, UsageError
from orchestrator.base.resources import resource_dir

__all__ = ["TARGETS", "RunnerBuild", "RuntimeInfo", "build_runner", "runner_env", "launch_words", "build_key",
           "sources_digest", "runner_slot"]

BUILD_FORMAT = "etfarm-runner-build/2"  # bump when the layout or the recipe changes
BUILD_INFO = "build.json"
RUNNER_REL = "bin/etfarm_runner"
BUILD_STEP_TIMEOUT_S = 1800
ANDROID_RUNTIME_STEP_TIMEOUT_S = 4 * 3600  # a from-source ExecuTorch build on 2 cores
SMOKE_TIMEOUT_S = 120
WHEEL_BUILD_OPTIONS = ("CMAKE_BUILD_TYPE=Release",)
BACKENDS_PREFIX = "ETFARM_BACKENDS "  # the runner's line listing the backends it registers

Log = Callable[[str], None]


@dataclass(frozen=True)
class RunnerBuild:
    """A built runner: `root` holds bin/etfarm_runner and lib/ with its shared libraries."""

    target: str
    key: str
    root: Path
    runner: Path
    libs: tuple[Path, ...]
    cached: bool
    # Which runtime, how it starts, what it registers: the fields of RuntimeInfo (artifacts/runner_info.py).
    runtime: str = RUNTIME_WHEEL
    launcher: tuple[str, ...] = ()
    bundled: tuple[str, ...] = ()
    executorch_dir: str = ""
    backends: tuple[str, ...] = ()

    @property
    def info(self) -> RuntimeInfo:
        return RuntimeInfo(self.runtime, self.launcher, self.bundled, self.executorch_dir, self.backends)

    def stage_files(self) -> dict[str, Path]:
        """Files to push, keyed by their path relative to the device workdir."""
        files = {RUNNER_REL: self.runner}
        files.update({f"lib/{lib.name}": lib for lib in self.libs})
        return files

    def start_words(self, workdir: str) -> list[str]:
        """The first argv words of a process run with this build staged in `workdir`: launcher + runner."""
        return launch_words(self.launcher, workdir)

    def env(self, workdir: str) -> dict[str, str]:
        """Environment for the staged runner; none through a bundled loader (it is told --library-path)."""
        return {} if self.launcher else runner_env(workdir)


def launch_words(launcher: Sequence[str], workdir: str) -> list[str]:
    """`launcher` + the runner, with "./" words made absolute in `workdir`."""
    base = workdir.rstrip("/")
    words = [f"{base}/{word[2:]}" if word.startswith("./") else word for word in launcher]
    return [*words, f"{base}/{RUNNER_REL}"]


def runner_env(workdir: str) -> dict[str, str]:
    """Environment for running the staged runner in `workdir` (its libs sit in workdir/lib)."""
    return {"LD_LIBRARY_PATH": f"{workdir.rstrip('/')}/lib"}


def build_jobs() -> int:
    """Parallel compile jobs: ETFARM_BUILD_JOBS, else at most 2 (shared machines)."""
    value = os.environ.get("ETFARM_BUILD_JOBS", "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return max(1, min(2, os.cpu_count() or 1))


def sources_digest(runners: Path) -> str:
    """Hash of every file under runners/ (relative path + content); hidden files ignored."""
    parts: list[str] = []
    for path in sorted(runners.rglob("*")):
        rel = path.relative_to(runners)
        if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
            parts += [rel.as_posix(), cache.sha256_file(path)]
    return cache.sha256_parts(parts)


def build_key(target: str, toolchain_identity: str, sources: str, runtime_identity: str, options: Sequence[str]) -> str:
    """Cache key of a runner build; equal inputs give equal keys, any change a new one."""
    return cache.sha256_parts([BUILD_FORMAT, target, toolchain_identity, sources, runtime_identity, *options])


@dataclass(frozen=True)
class _Plan:
    toolchain: Toolchain
    runtime_identity: str
    options: tuple[str, ...]
    build: Callable[[Path, Path, Log], str]  # (install_root, work_dir, log) -> the executorch_DIR used
    runtime: str = RUNTIME_WHEEL


def build_runner(target: str, *, force: bool = False, log: Log = lambda s: None,
                 android_ndk: Path | None = None, executorch_src: Path | None = None,
                 runtime: Path | str | None = None) -> RunnerBuild:
    """Build (or find cached) the runner for `target`.

    Raises UsageError for an unknown target or a `runtime` that is no ExecuTorch install prefix,
    and BuildError when a toolchain, the runtime or a build step fails (the message names the
    command and its output tail). `android_ndk`/`executorch_src` default to $ANDROID_NDK and
    $EXECUTORCH_SRC; without an NDK, android-arm64-v8a is the bundled-glibc build.
    `runtime`: the user's own ExecuTorch CMake install prefix instead of the wheel's runtime.
    """
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; known targets: {', '.join(TARGETS)}")
    user = user_runtime(runtime) if runtime is not None else None
    if target == ANDROID_TARGET and targets.android_ndk(android_ndk) is None:
        return _bundled_glibc_build(force, log, user)
    runners = resource_dir("runners")
    plan = _plan(target, runners, android_ndk, executorch_src, user)
    key = build_key(target, plan.toolchain.identity, sources_digest(runners), plan.runtime_identity, plan.options)
    root = cache.cache_dir("builds") / f"{target}-{key[:20]}"
    if not force and _is_complete(root):
        return _result(target, key, root, cached=True)
    if procs.which("cmake") is None:
        raise BuildError("cmake not found: building the runner needs cmake >= 3.24 (apt-get install cmake)")

    def make(staging: Path) -> dict[str, object]:
        log(f"building etfarm_runner for {target} ({plan.toolchain.cxx})")
        work = staging / "_work"
        executorch_dir = plan.build(staging, work, log)
        shutil.rmtree(work, ignore_errors=True)
        backends = _smoke_test(target, plan.toolchain.emulator, staging, (), runner_env(str(staging)), log)
        return {"compiler": plan.toolchain.identity, "runtime": plan.runtime_identity, "options": list(plan.options),
                "runtime_kind": plan.runtime, "executorch_dir": executorch_dir, "backends": backends}

    return _publish(target, key, root, force, make, log)


def _bundled_glibc_build(force: bool, log: Log, user: UserRuntime | None) -> RunnerBuild:
    """android-arm64-v8a without an NDK: the linux-aarch64 build + the glibc it needs, from the cross sysroot."""
    base = build_runner("linux-aarch64", force=force, log=log, runtime=user.prefix if user else None)
    bundle = glibc_bundle(base.runner, base.libs)
    key = build_key(ANDROID_TARGET, RUNTIME_BUNDLED_GLIBC, base.key, bundle.identity, ())
    root = cache.cache_dir("builds") / f"{ANDROID_TARGET}-{key[:20]}"
    if not force and _is_complete(root):
        return _result(ANDROID_TARGET, key, root, cached=True)

    def make(staging: Path) -> dict[str, object]:
        shutil.copytree(base.root / "bin", staging / "bin")
        shutil.copytree(base.root / "lib", staging / "lib", dirs_exist_ok=True)
        nbytes = bundle.install(staging / "lib")
        log(f"bundled glibc from {bundle.sysroot} ({nbytes / 1e6:.1f} MB): {', '.join(bundle.names)}")
        qemu = procs.which(targets.QEMU_AARCH64)
        with tempfile.TemporaryDirectory(prefix="etfarm-empty-root-") as empty:  # no glibc to fall back on
            emulator = (str(qemu), "-L", empty) if qemu else None
            backends = _smoke_test(ANDROID_TARGET, emulator, staging, bundle.launcher(), {}, log)
        info = {k: v for k, v in read_build_info(base).items() if k not in ("target", "key", "build_seconds", "built_at")}
        return {**info, "runtime_kind": RUNTIME_USER if user else RUNTIME_BUNDLED_GLIBC, "base_build": base.key,
                "launcher": list(bundle.launcher()), "bundled": list(bundle.names), "glibc_sysroot": str(bundle.sysroot),
                "glibc": bundle.identity, "backends": backends or info.get("backends", [])}

    return _publish(ANDROID_TARGET, key, root, force, make, log)


def _publish(target: str, key: str, root: Path, force: bool, make: Callable[[Path], dict[str, object]],
             log: Log) -> RunnerBuild:
    """Fill a staging dir with `make` (it returns build.json's fields), then publish it as `root`; one process at a
    time (another that built it meanwhile leaves it to be found)."""
    with cache.making("builds", key, lambda: log(f"waiting for another etfarm process building the runner for "
                                                 f"{target}")):
        if not force and _is_complete(root):
            return _result(target, key, root, cached=True)
        return _build_and_publish(target, key, root, force, make, log)


def _build_and_publish(target: str, key: str, root: Path, force: bool, make: Callable[[Path], dict[str, object]],
                       log: Log) -> RunnerBuild:
    started = time.monotonic()
    staging = cache.staging_dir("builds")
    try:
        info = {"target": target, "key": key, **make(staging),
                "build_seconds": round(time.monotonic() - started, 1), "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        cache.write_json_atomic(staging / BUILD_INFO, info)
        staging.chmod(0o755)  # mkdtemp makes it private; the build is meant to be shared
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if force and root.exists():
        _retire(root)
    cache.publish_dir(staging, root)
    log(f"built etfarm_runner for {target} in {time.monotonic() - started:.1f}s: {root}")
    return _result(target, key, root, cached=False)


def _plan(target: str, runners: Path, android_ndk: Path | None, executorch_src: Path | None,
          user: UserRuntime | None) -> _Plan:
    jobs = build_jobs()
    generator = "Ninja" if procs.which("ninja") else None
    if target == ANDROID_TARGET:
        return _android_plan(runners, android_ndk, executorch_src, user, jobs)
    toolchain = targets.host_toolchain() if target == "host" else targets.aarch64_toolchain(runners)
    if user is not None:

        def build_user(root: Path, work: Path, log: Log) -> str:
            _run_steps(target, targets.runner_commands(runners, work, root, user.cmake_args(), toolchain, jobs, generator), log)
            return str(user.executorch_dir)

        return _Plan(toolchain, user.identity, USER_BUILD_OPTIONS, build_user, RUNTIME_USER)
    version = targets.executorch_version()
    if target == "host":

        def build_host(root: Path, work: Path, log: Log) -> str:
            et_root = targets.host_executorch_dir()
            _run_steps(target, targets.wheel_runner_commands(runners, work, root, et_root, toolchain, jobs, generator), log)
            return str(et_root / "share" / "cmake")

        return _Plan(toolchain, f"executorch=={version} (installed wheel)", WHEEL_BUILD_OPTIONS, build_host)

    def build_aarch64(root: Path, work: Path, log: Log) -> str:
        et_root = targets.aarch64_runtime(version, log)  # only on a cold build
        _run_steps(target, targets.wheel_runner_commands(runners, work, root, et_root, toolchain, jobs, generator), log)
        return str(et_root / "share" / "cmake")

    runtime = f"executorch=={version} ({targets.AARCH64_WHEEL_PLATFORM} wheel)"
    return _Plan(toolchain, runtime, WHEEL_BUILD_OPTIONS, build_aarch64)


def _android_plan(runners: Path, android_ndk: Path | None, executorch_src: Path | None, user: UserRuntime | None,
                  jobs: int) -> _Plan:
    """The NDK builds: against the user's prefix, or against ExecuTorch built from EXECUTORCH_SRC."""
    target = ANDROID_TARGET
    if user is not None:
        ndk = targets.android_ndk(android_ndk)
        assert ndk is not None  # build_runner took the bundled-glibc route otherwise
        toolchain = Toolchain(target, "NDK clang", targets.check_ndk(ndk), (), None)

        def build_user(root: Path, work: Path, log: Log) -> str:
            commands = targets.android_runner_commands(ndk, user.prefix, runners, work, root, jobs,
                                                       executorch_dir=user.executorch_dir, extra=("-DETFARM_ALL_BACKENDS=ON",))
            _run_steps(target, commands, log)
            return str(user.executorch_dir)

        options = (*targets.android_common_args(ndk), *USER_BUILD_OPTIONS)
        return _Plan(toolchain, user.identity, options, build_user, RUNTIME_USER)
    inputs = targets.android_inputs(android_ndk, executorch_src)
    toolchain = Toolchain(target, "NDK clang", inputs.identity, (), None)  # no emulator: runs on devices only
    options = (*targets.android_common_args(inputs.ndk), *targets.ANDROID_EXECUTORCH_OPTIONS)

    def build_android(root: Path, work: Path, log: Log) -> str:
        prefix = _android_runtime(inputs, jobs, log)
        _run_steps(target, targets.android_runner_commands(inputs.ndk, prefix, runners, work, root, jobs), log)
        return str(prefix / "lib" / "cmake" / "ExecuTorch")

    return _Plan(toolchain, inputs.identity, options, build_android, RUNTIME_NDK)


def _android_runtime(inputs: targets.AndroidInputs, jobs: int, log: Log) -> Path:
    """ExecuTorch built from source for Android, installed once per NDK + source revision.

    Installed in place under a lock (not staged and renamed): CMake install trees
    are not guaranteed relocatable. A marker file written last says it is complete.
    """
    key = cache.sha256_parts([BUILD_FORMAT, inputs.identity, *targets.ANDROID_EXECUTORCH_OPTIONS])
    runtimes = cache.cache_dir("runtimes")
    prefix = runtimes / f"executorch-android-{targets.ANDROID_ABI}-{key[:20]}"
    with cache.file_lock(runtimes / f"{prefix.name}.lock"):
        if targets.android_runtime_json(prefix).is_file():
            return prefix
        shutil.rmtree(prefix, ignore_errors=True)  # a partial install left by a crash
        log(f"building ExecuTorch from {inputs.src} for Android {targets.ANDROID_ABI} (this takes a while)")
        work = cache.staging_dir("runtimes")
        try:
            commands = targets.android_runtime_commands(inputs.ndk, inputs.src, prefix, work, jobs)
            _run_steps("android-arm64-v8a (ExecuTorch runtime)", commands, log, ANDROID_RUNTIME_STEP_TIMEOUT_S)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        targets.write_android_marker(prefix, inputs)
    return prefix


def _run_steps(what: str, commands: list[list[str]], log: Log, timeout_s: float = BUILD_STEP_TIMEOUT_S) -> None:
    for argv in commands:
        log(f"$ {' '.join(argv)}")
        try:
            result = procs.run(argv, timeout_s=timeout_s)
        except OSError as exc:
            raise BuildError(f"building the runner for {what} failed: cannot run {argv[0]}: {exc}") from None
        if not result.ok:
            raise BuildError(f"building the runner for {what} failed: {targets.failure_message(_step_name(argv), result)}")


def _step_name(argv: Sequence[str]) -> str:
    steps = {"--build": "cmake build", "--install": "cmake install", "-S": "cmake configure"}
    return steps.get(argv[1], argv[0]) if len(argv) > 1 else argv[0]


def _smoke_test(target: str, emulator: Sequence[str] | None, root: Path, launcher: Sequence[str],
                env: dict[str, str], log: Log) -> list[str]:
    """Run `etfarm_runner --help` with only root/lib to load from: catches missing libs.

    Returns the backends the runner registers (its ETFARM_BACKENDS line); [] when it cannot run here."""
    if emulator is None:
        log(f"{target} binaries cannot run on this host; start-up check skipped")
        return []
    argv = [*emulator, *launch_words(launcher, str(root)), "--help"]
    result = procs.run(argv, env=env, timeout_s=SMOKE_TIMEOUT_S)
    if not result.ok:
        raise BuildError(f"the {target} runner was built but does not start: {targets.failure_message(argv[0], result)}")
    for line in result.stdout.splitlines():
        if line.startswith(BACKENDS_PREFIX):
            try:
                return [str(name) for name in json.loads(line.removeprefix(BACKENDS_PREFIX))]
            except (ValueError, TypeError):
                break
    return []


def _is_complete(root: Path) -> bool:
    return (root / BUILD_INFO).is_file() and (root / RUNNER_REL).is_file()


def _result(target: str, key: str, root: Path, cached: bool) -> RunnerBuild:
    lib_dir = root / "lib"
    libs = tuple(sorted(p for p in lib_dir.iterdir() if p.is_file() and ".so" in p.name)) if lib_dir.is_dir() else ()
    try:
        info = json.loads((root / BUILD_INFO).read_text())
    except (OSError, ValueError):
        info = {}
    return RunnerBuild(target=target, key=key, root=root, runner=root / RUNNER_REL, libs=libs, cached=cached,
                       runtime=str(info.get("runtime_kind", RUNTIME_WHEEL)),
                       launcher=tuple(str(w) for w in info.get("launcher", ())),
                       bundled=tuple(str(n) for n in info.get("bundled", ())),
                       executorch_dir=str(info.get("executorch_dir", "")),
                       backends=tuple(str(n) for n in info.get("backends", ())))


def _retire(root: Path) -> None:
    """Move an old build aside before a forced rebuild replaces it."""
    aside = root.with_name(f".old-{root.name}-{os.getpid()}")
    try:
        os.rename(root, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def read_build_info(build: RunnerBuild) -> dict[str, object]:
    """The build.json of a build (what it was built from, how long it took)."""
    return json.loads((build.root / BUILD_INFO).read_text())
