"""Build the C++ runner (runners/) for a target, cached by content.

A build lives in `cache_dir("builds")/<target>-<key>/`:

    bin/etfarm_runner      RUNPATH $ORIGIN/../lib
    lib/*.so               the ExecuTorch runtime libraries it needs (none for Android: static)
    build.json             what it was built from

so the directory is self-contained and is pushed to a device as is. The key hashes
the target, the toolchain identity (compiler path + `--version`, or NDK revision),
every file under runners/, the ExecuTorch runtime identity and the build options; a
warm call runs no cmake and returns `cached=True`. Builds happen in a staging dir
that is published with one rename, so concurrent builders never see a partial one.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from orchestrator import cache, procs
from orchestrator.artifacts import targets
from orchestrator.artifacts.targets import TARGETS, Toolchain
from orchestrator.errors import BuildError, UsageError
from orchestrator.resources import resource_dir

__all__ = ["TARGETS", "RunnerBuild", "build_runner", "runner_env", "build_key", "sources_digest"]

BUILD_FORMAT = "etfarm-runner-build/1"  # bump when the layout or the recipe changes
BUILD_INFO = "build.json"
RUNNER_REL = "bin/etfarm_runner"
BUILD_STEP_TIMEOUT_S = 1800
ANDROID_RUNTIME_STEP_TIMEOUT_S = 4 * 3600  # a from-source ExecuTorch build on 2 cores
SMOKE_TIMEOUT_S = 120
WHEEL_BUILD_OPTIONS = ("CMAKE_BUILD_TYPE=Release",)

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

    def stage_files(self) -> dict[str, Path]:
        """Files to push, keyed by their path relative to the device workdir."""
        files = {RUNNER_REL: self.runner}
        files.update({f"lib/{lib.name}": lib for lib in self.libs})
        return files


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
    build: Callable[[Path, Path, Log], None]  # (install_root, work_dir, log)


def build_runner(target: str, *, force: bool = False, log: Log = lambda s: None,
                 android_ndk: Path | None = None, executorch_src: Path | None = None) -> RunnerBuild:
    """Build (or find cached) the runner for `target`.

    Raises UsageError for an unknown target and BuildError when a toolchain, the
    runtime or a build step fails (the message names the command and its output tail).
    `android_ndk`/`executorch_src` default to $ANDROID_NDK and $EXECUTORCH_SRC.
    """
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}; known targets: {', '.join(TARGETS)}")
    runners = resource_dir("runners")
    plan = _plan(target, runners, android_ndk, executorch_src)
    key = build_key(target, plan.toolchain.identity, sources_digest(runners), plan.runtime_identity, plan.options)
    root = cache.cache_dir("builds") / f"{target}-{key[:20]}"
    if not force and _is_complete(root):
        return _result(target, key, root, cached=True)
    if procs.which("cmake") is None:
        raise BuildError("cmake not found: building the runner needs cmake >= 3.24 (apt-get install cmake)")

    log(f"building etfarm_runner for {target} ({plan.toolchain.cxx})")
    started = time.monotonic()
    staging = cache.staging_dir("builds")
    work = staging / "_work"
    try:
        plan.build(staging, work, log)
        shutil.rmtree(work, ignore_errors=True)
        _smoke_test(plan.toolchain, staging, log)
        info = {"target": target, "key": key, "compiler": plan.toolchain.identity,
                "runtime": plan.runtime_identity, "options": list(plan.options),
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


def _plan(target: str, runners: Path, android_ndk: Path | None, executorch_src: Path | None) -> _Plan:
    jobs = build_jobs()
    generator = "Ninja" if procs.which("ninja") else None
    if target == "host":
        toolchain = targets.host_toolchain()
        version = targets.executorch_version()

        def build_host(root: Path, work: Path, log: Log) -> None:
            et_root = targets.host_executorch_dir()
            _run_steps(target, targets.wheel_runner_commands(runners, work, root, et_root, toolchain, jobs, generator), log)

        return _Plan(toolchain, f"executorch=={version} (installed wheel)", WHEEL_BUILD_OPTIONS, build_host)

    if target == "linux-aarch64":
        toolchain = targets.aarch64_toolchain(runners)
        version = targets.executorch_version()

        def build_aarch64(root: Path, work: Path, log: Log) -> None:
            et_root = targets.aarch64_runtime(version, log)  # only on a cold build
            _run_steps(target, targets.wheel_runner_commands(runners, work, root, et_root, toolchain, jobs, generator), log)

        runtime = f"executorch=={version} ({targets.AARCH64_WHEEL_PLATFORM} wheel)"
        return _Plan(toolchain, runtime, WHEEL_BUILD_OPTIONS, build_aarch64)

    inputs = targets.android_inputs(android_ndk, executorch_src)
    toolchain = Toolchain(target, "NDK clang", inputs.identity, (), None)  # no emulator: runs on devices only
    options = (*targets.android_common_args(inputs.ndk), *targets.ANDROID_EXECUTORCH_OPTIONS)

    def build_android(root: Path, work: Path, log: Log) -> None:
        prefix = _android_runtime(inputs, jobs, log)
        _run_steps(target, targets.android_runner_commands(inputs.ndk, prefix, runners, work, root, jobs), log)

    return _Plan(toolchain, inputs.identity, options, build_android)


def _android_runtime(inputs: targets.AndroidInputs, jobs: int, log: Log) -> Path:
    """ExecuTorch built from source for Android, installed once per NDK + source revision.

    Installed in place under a lock (not staged and renamed): CMake install trees
    are not guaranteed relocatable. A marker file written last says it is complete.
    """
    key = cache.sha256_parts([BUILD_FORMAT, inputs.identity, *targets.ANDROID_EXECUTORCH_OPTIONS])
    runtimes = cache.cache_dir("runtimes")
    prefix = runtimes / f"executorch-android-{targets.ANDROID_ABI}-{key[:20]}"
    with _file_lock(runtimes / f"{prefix.name}.lock"):
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


def _smoke_test(toolchain: Toolchain, root: Path, log: Log) -> None:
    """Run `etfarm_runner --help` with only root/lib on the library path: catches missing libs."""
    if toolchain.emulator is None:
        log(f"{toolchain.target} binaries cannot run on this host; start-up check skipped")
        return
    runner = root / RUNNER_REL
    result = procs.run([*toolchain.emulator, str(runner), "--help"], env=runner_env(str(root)), timeout_s=SMOKE_TIMEOUT_S)
    if not result.ok:
        raise BuildError(
            f"the {toolchain.target} runner was built but does not start: {targets.failure_message(str(runner), result)}"
        )


def _is_complete(root: Path) -> bool:
    return (root / BUILD_INFO).is_file() and (root / RUNNER_REL).is_file()


def _result(target: str, key: str, root: Path, cached: bool) -> RunnerBuild:
    lib_dir = root / "lib"
    libs = tuple(sorted(p for p in lib_dir.iterdir() if p.is_file() and ".so" in p.name)) if lib_dir.is_dir() else ()
    return RunnerBuild(target=target, key=key, root=root, runner=root / RUNNER_REL, libs=libs, cached=cached)


def _retire(root: Path) -> None:
    """Move an old build aside before a forced rebuild replaces it."""
    aside = root.with_name(f".old-{root.name}-{os.getpid()}")
    try:
        os.rename(root, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_build_info(build: RunnerBuild) -> dict[str, object]:
    """The build.json of a build (what it was built from, how long it took)."""
    return json.loads((build.root / BUILD_INFO).read_text())
