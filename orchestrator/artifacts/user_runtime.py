"""A user's own ExecuTorch runtime: a CMake install prefix named by `runtime: PATH`.

People with an NPU or GPU backend (QNN, Vulkan, MediaTek, Exynos, custom ops) build
ExecuTorch themselves; the wheel's runtime cannot load their programs. The runner is then
built against their install prefix, either shape:

- a source install (`cmake --install` of ExecuTorch): `lib/cmake/ExecuTorch/executorch-config.cmake`
  with static archives under the in-tree target names;
- a wheel-shaped package (`share/cmake/executorch-config.cmake`, shared `lib/libexecutorch*.so`).

The runner links every backend and kernel library the prefix offers
(`-DETFARM_ALL_BACKENDS=ON`, runners/CMakeLists.txt) and the build records the
`executorch_DIR` it used. The prefix's identity for the build key is its path plus the
name, size and mtime of every file under its lib/, include/ and config directory: a
rebuilt runtime gives a new key without hashing hundreds of megabytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from orchestrator.base import cache
from orchestrator.base.errors import UsageError

# Where an install prefix keeps executorch-config.cmake, in the order they are tried.
CONFIG_DIRS = ("lib/cmake/ExecuTorch", "lib64/cmake/ExecuTorch", "share/cmake", "lib/cmake/executorch")
CONFIG_FILE = "executorch-config.cmake"
USER_BUILD_OPTIONS = ("CMAKE_BUILD_TYPE=Release", "ETFARM_ALL_BACKENDS=ON")


@dataclass(frozen=True)
class UserRuntime:
    prefix: Path
    executorch_dir: Path  # the directory holding executorch-config.cmake (cmake -Dexecutorch_DIR)
    identity: str

    @property
    def source_install(self) -> bool:
        """True for a `cmake --install` of ExecuTorch (static archives), False for the wheel's shape."""
        return self.executorch_dir.name == "ExecuTorch"

    def cmake_args(self) -> tuple[str, ...]:
        args = [f"-Dexecutorch_DIR={self.executorch_dir}", "-DETFARM_ALL_BACKENDS=ON"]
        if self.source_install:  # cross toolchains confine package lookups to their sysroot otherwise
            args += [f"-DCMAKE_FIND_ROOT_PATH={self.prefix}", "-DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=BOTH"]
        return tuple(args)


def user_runtime(prefix: Path | str) -> UserRuntime:
    """Check `prefix` is an ExecuTorch CMake install prefix; UsageError (exit 2) naming what is missing."""
    root = Path(prefix).expanduser()
    if not root.is_dir():
        raise UsageError(f"runtime {root}: no such directory (an ExecuTorch CMake install prefix is expected)")
    root = root.resolve()
    for rel in CONFIG_DIRS:
        if (root / rel / CONFIG_FILE).is_file():
            config = root / rel
            return UserRuntime(root, config, _identity(root, config))
    tried = ", ".join(f"{rel}/{CONFIG_FILE}" for rel in CONFIG_DIRS)
    raise UsageError(f"runtime {root} is not an ExecuTorch CMake install prefix: it has none of {tried}")


def _identity(root: Path, config: Path) -> str:
    parts = [f"user runtime {root}"]
    for top in sorted({root / "lib", root / "lib64", root / "include", config}):
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                try:
                    st = path.stat()
                except OSError:
                    continue
                parts += [path.relative_to(root).as_posix(), f"{st.st_size}:{st.st_mtime_ns}"]
    return cache.sha256_parts(parts)
