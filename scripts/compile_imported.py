"""Compile the bytecode of the libraries etfarm imports by importing them once (`make setup`, after pip).

pip installs with --no-compile: compiling every module of torch, executorch, transformers, sympy and the rest
(23,000 files) took 65 of the install's 105 s on the 2-core testbed, while etfarm's processes import about 4,000 of
them. Importing those here, with bytecode writing on, compiles exactly those (18 s); a module imported only later
is compiled by its first importer, once, because make keeps bytecode writing on for its own commands (Makefile).
An import that fails here only leaves its modules to be compiled later: it is named, and setup goes on.
"""

from __future__ import annotations

import importlib
import sys
import warnings

# What export, analysis, verdicts, reports, the farm and the agents import (each module pulls in its dependencies).
MODULES = (
    "torch", "torch.export", "numpy", "pandas", "scipy.stats", "scipy.special", "matplotlib.pyplot", "yaml", "typer",
    "paramiko", "adbutils", "flatbuffers", "tenacity", "ruptures", "distributed",
    "executorch.exir", "executorch.export", "executorch.runtime", "executorch.devtools",
    "executorch.backends.xnnpack.partition.xnnpack_partitioner", "executorch.backends.xnnpack.recipes",
    "executorch.backends.xnnpack.quantizer.xnnpack_quantizer", "torchao.quantization.pt2e.quantize_pt2e",
    "executorch.examples.models.llama.export_llama_lib", "pytest", "xdist",
)


def main() -> int:
    if sys.flags.dont_write_bytecode:
        print("compile_imported: bytecode writing is off (PYTHONDONTWRITEBYTECODE); nothing compiled")
        return 0
    warnings.simplefilter("ignore")
    for name in MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 -- setup goes on; the module is compiled by its first importer
            print(f"compile_imported: could not import {name}: {type(exc).__name__}: {exc}".splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
