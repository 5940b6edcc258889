"""runners/CMakeLists.txt against a source-install-shaped ExecuTorch package, configure only.

No ExecuTorch source build can be made here (NDK route, a user's QNN/Vulkan install), so a fake
package declares the in-tree target names; cmake's generated link line must keep every
registration library (delegates, kernel libraries) whole-archived, leave portable_ops_lib out
beside the optimized kernels, and install shared ones beside the runner.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.tools import require_tool

RUNNERS = Path(__file__).resolve().parents[3] / "runners"
STATIC = ("executorch_core", "executorch", "extension_module_static", "extension_data_loader", "extension_tensor",
          "etdump", "flatccrt", "xnnpack_backend", "vulkan_backend", "optimized_native_cpu_ops_lib", "portable_ops_lib",
          "quantized_ops_lib", "custom_ops", "extension_threadpool", "XNNPACK")


def _fake_package(root: Path) -> Path:
    config = root / "lib" / "cmake" / "ExecuTorch"
    config.mkdir(parents=True)
    lines = [f"set(EXECUTORCH_INCLUDE_DIRS {root}/include)"]
    for name in STATIC:
        lines += [f"add_library({name} STATIC IMPORTED)",
                  f"set_target_properties({name} PROPERTIES IMPORTED_LOCATION {root}/lib/lib{name}.a)"]
    lines += ["add_library(qnn_executorch_backend SHARED IMPORTED)",
              f"set_target_properties(qnn_executorch_backend PROPERTIES IMPORTED_LOCATION {root}/lib/libqnn_executorch_backend.so)"]
    (config / "executorch-config.cmake").write_text("\n".join(lines) + "\n")
    return config


@pytest.mark.slow
def test_source_install_links_every_registration_library(tmp_path: Path) -> None:
    require_tool("cmake")  # a testbed tool: CI=true fails without it, never skips
    config = _fake_package(tmp_path / "prefix")
    build = tmp_path / "build"
    result = subprocess.run(["cmake", "-S", str(RUNNERS), "-B", str(build), f"-Dexecutorch_DIR={config}",
                             "-DETFARM_ALL_BACKENDS=ON", "-G", "Unix Makefiles"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ("etfarm_runner registration libraries: xnnpack_backend;vulkan_backend;optimized_native_cpu_ops_lib;"
            "quantized_ops_lib;custom_ops;qnn_executorch_backend") in result.stdout
    link = (build / "CMakeFiles" / "etfarm_runner.dir" / "link.txt").read_text()
    whole = link[link.index("--whole-archive"):link.index("--pop-state")]
    for name in ("xnnpack_backend", "vulkan_backend", "optimized_native_cpu_ops_lib", "quantized_ops_lib", "custom_ops"):
        assert f"lib{name}.a" in whole, name
    assert "libportable_ops_lib.a" not in link, "the optimized kernels already register the portable ones"
    assert "--no-as-needed" in link and "libqnn_executorch_backend.so" in link
    install = (build / "cmake_install.cmake").read_text()
    assert "libqnn_executorch_backend.so" in install, "shared registration libraries are installed beside the runner"
