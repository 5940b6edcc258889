"""How often an etfarm process runs CPython's cycle collector.

An export imports torch and ExecuTorch (some two million objects that live as long as the process) and then builds as
many again (FX graphs, fake tensors, node metadata), nearly all alive until it ends. Under CPython's default
thresholds (700, 10, 10) a young collection runs every 700 new container objects and a full one, which walks every
live object, after 100 of those: in an export most of that work finds nothing to free. Collected every 50,000, an
export of tiny_cnn took 11 % less CPU (0.890x, 6 pairs) at 0.1 % more peak memory; MobileNetV2's showed no change
beyond the noise, at 1 % more (benchmarks/README.md, "Exports"). Objects are still freed by reference counting the
moment they are no longer used; only reference cycles wait longer, and at most 50,000 new objects are ever pending.
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 20)


def collect_less_often() -> None:
    """Set this process's collector thresholds (call once, at the start of a process that may import torch)."""
    gc.set_threshold(*THRESHOLDS)
