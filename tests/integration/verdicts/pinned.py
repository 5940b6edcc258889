"""What the real-run verdict tests share: the `local` device pinned to core 1, the deep MLP at two depths, and
an HTML page's words as a reader sees them."""

from __future__ import annotations

import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
MODEL = REPO / "configs" / "models" / "deep_mlp.py"


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=600,
                          check=False)


def pinned_inventory(root: Path) -> Path:
    """An inventory with one device, `pinned`: this host, runner on core 1 (`taskset -c 1`)."""
    inventory = root / "devices.yaml"
    inventory.write_text(yaml.safe_dump({"devices": {"pinned": {
        "transport": "local", "target": "host", "workdir": str(root / "work"), "exec_prefix": "taskset -c 1"}}}))
    return inventory


def mlp_variants(root: Path) -> dict[str, Path]:
    """`base` (configs/models/deep_mlp.py, 40 layers 64 wide) and `x2` (the same 40 layers twice as wide: four times
    the arithmetic), each as `<root>/<kind>/mlp.py`. Wider, not deeper: an export's time grows with the layers, and
    80 layers took three times as long to export as 40."""
    models = {}
    for kind, width in (("base", 64), ("x2", 128)):
        (root / kind).mkdir()
        models[kind] = root / kind / "mlp.py"
        models[kind].write_text(MODEL.read_text().replace("WIDTH = 64", f"WIDTH = {width}"))
    return models


def page_text(path: Path) -> str:
    """The words of an HTML page, tags and styles gone, spaced as written ("( 1.2 )" -> "(1.2)")."""
    body = re.sub(r"<style>.*?</style>", "", path.read_text(), flags=re.DOTALL)
    words = " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())
    return re.sub(r"([(\[]) | ([:;,.)\]])", lambda m: m.group(1) or m.group(2), words)
