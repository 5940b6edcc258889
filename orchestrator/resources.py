"""Find files shipped beside the Python packages: runners/ and configs/.

In a checkout (editable install) they sit at the top of the repository; a
regular install carries them under <prefix>/share/etfarm (pyproject data-files).
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

from orchestrator.errors import EtfarmError

_CHECKOUT_ROOT = Path(__file__).resolve().parent.parent


# A file each resource directory must hold, so an unrelated `configs/` folder is never taken.
_MARKERS = {"runners": "CMakeLists.txt", "configs": "devices.yaml"}


def resource_dir(name: str) -> Path:
    """Directory of shipped resource `name` ("runners" or "configs")."""
    for base in _candidates():
        candidate = base / name
        if (candidate / _MARKERS[name]).is_file():
            return candidate
    raise EtfarmError(
        f"etfarm installation is incomplete: no '{name}' directory found (looked in {', '.join(str(b) for b in _candidates())})"
    )


def _candidates() -> list[Path]:
    data = Path(sysconfig.get_path("data")) / "share" / "etfarm"
    return [_CHECKOUT_ROOT, data, Path(sys.prefix) / "share" / "etfarm"]
