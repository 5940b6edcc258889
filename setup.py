"""Build-time copy of runners/ and configs/ into the wheel, as package data of `orchestrator.shipped`.

The product fixes runners/ and configs/ at the top of the checkout; setuptools' `data-files`
(the old way to ship them) is deprecated and lands outside any package. Instead build_py copies
them to `orchestrator/shipped/{runners,configs}` in the build tree, where `orchestrator.base.resources`
finds them with importlib.resources in a regular install. Everything else is in pyproject.toml.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED = {  # directory -> glob patterns of the files a regular install needs
    "runners": ("CMakeLists.txt", "*.cpp", "*.h", "toolchains/*.cmake"),
    "configs": ("*.yaml", "models/*.py"),
}


class BuildPyWithResources(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "orchestrator" / "shipped"
        for directory, patterns in SHIPPED.items():
            for pattern in patterns:
                for source in sorted((ROOT / directory).glob(pattern)):
                    dest = target / directory / source.relative_to(ROOT / directory)
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, dest)


setup(cmdclass={"build_py": BuildPyWithResources})
