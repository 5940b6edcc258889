"""Find files shipped beside the Python packages: runners/ (the C++ runner's sources) and configs/.

In a checkout (an editable install) they sit at the top of the repository. A regular install
carries them as package data, `orchestrator/shipped/{runners,configs}`, copied there at build
time by setup.py (no deprecated data-files), and found with importlib.resources.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from orchestrator.base.errors import EtfarmError

# the directory holding the orchestrator package (a checkout's top), wherever this module sits inside it
_CHECKOUT_ROOT = Path(str(resources.files("orchestrator"))).resolve().parent
SHIPPED_PACKAGE_DIR = "shipped"  # under the orchestrator package, in a wheel

# A file each resource directory must hold, so an unrelated `configs/` folder is never taken.
_MARKERS = {"runners": "CMakeLists.txt", "configs": "devices.yaml"}


def resource_dir(name: str) -> Path:
    """Directory of shipped resource `name` ("runners" or "configs")."""
    for base in _candidates():
        candidate = base / name
        if (candidate / _MARKERS[name]).is_file():
            return candidate
    looked = ", ".join(str(b) for b in _candidates())
    raise EtfarmError(f"etfarm installation is incomplete: no '{name}' directory found (looked in {looked})")


def _candidates() -> list[Path]:
    # A wheel is installed unpacked, so the package's files are real paths.
    installed = Path(str(resources.files("orchestrator"))) / SHIPPED_PACKAGE_DIR
    return [_CHECKOUT_ROOT, installed]
