"""Compile the bytecode of the libraries etfarm imports by importing them once (`make setup`, after pip).

pip installs with --no-compile: compiling every module of torch, executorch, transformers, sympy and the rest
(23,000 files) took 65 of the install's 105 s on the 2-core testbed, while etfarm's processes import about 4,000 of
them. Importing those here, with bytecode writing on, compiles exactly those (17 s in two processes); a module imported only later
is compiled by its first importer, once, because make keeps bytecode writing on for its own commands (Makefile).
An import that fails here only leaves its modules to be compiled later: it is named, and setup goes on.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

# What export, analysis, verdicts, reports, the farm and the agents import (each module pulls in its dependencies), in
# two groups imported side by side, one per core: torch and executorch (17 s alone), and everything else (7 s).
GROUPS = (
    ("torch", "torch.export", "executorch.exir", "executorch.export", "executorch.runtime", "executorch.devtools",
     "executorch.backends.xnnpack.partition.xnnpack_partitioner", "executorch.backends.xnnpack.recipes",
     "executorch.backends.xnnpack.quantizer.xnnpack_quantizer", "torchao.quantization.pt2e.quantize_pt2e",
     "executorch.examples.models.llama.export_llama_lib"),
    ("numpy", "pandas", "scipy.stats", "scipy.special", "matplotlib.pyplot", "yaml", "typer", "paramiko", "adbutils",
     "flatbuffers", "tenacity", "ruptures", "distributed", "pytest", "xdist"),
)


def import_all(names: tuple[str, ...]) -> None:
    warnings.simplefilter("ignore")
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 -- setup goes on; the module is compiled by its first importer
            print(f"compile_imported: could not import {name}: {type(exc).__name__}: {exc}".splitlines()[0])


def main() -> int:
    if sys.flags.dont_write_bytecode:
        print("compile_imported: bytecode writing is off (PYTHONDONTWRITEBYTECODE); nothing compiled")
        return 0
    if len(sys.argv) > 1:  # one group, in a process of its own
        import_all(GROUPS[int(sys.argv[1])])
        return 0
    # Side by side: 17 s where one process took 23 s (fresh venv, 2 cores). A module both import may be compiled
    # twice; each write replaces the file whole, so either copy is right.
    workers = [subprocess.Popen([sys.executable, __file__, str(k)]) for k in range(len(GROUPS))]
    for k, worker in enumerate(workers):
        if worker.wait():  # only speed is lost: its modules are compiled by their first importers
            print(f"compile_imported: group {k} ({GROUPS[k][0]}, ...) exited {worker.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
