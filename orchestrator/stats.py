"""Small statistics shared by every stage, and the one home of the instability rule.

Definitions follow numpy (and so ExecuTorch's Inspector): median, sample standard deviation
(ddof=1). numpy is imported inside the functions so light commands stay light. Ratios between
devices or runs, with their bootstrap intervals and tests, live in orchestrator/verdicts/statistics.py.
"""

from __future__ import annotations

from collections.abc import Sequence

# A result whose coefficient of variation exceeds this is flagged unstable (printed `!` / UNSTABLE).
UNSTABLE_CV = 0.10


def median(samples: Sequence[float]) -> float | None:
    import numpy as np

    return float(np.median(samples)) if len(samples) else None


def percentile(samples: Sequence[float], q: float) -> float | None:
    """numpy's linear percentile, as Inspector computes p10/p50/p90."""
    import numpy as np

    return float(np.percentile(samples, q)) if len(samples) else None


def coefficient_of_variation(samples: Sequence[float]) -> float | None:
    """std (ddof=1) / mean; None with fewer than two samples or a non-positive mean."""
    import numpy as np

    if len(samples) < 2:
        return None
    mean = float(np.mean(samples))
    return float(np.std(samples, ddof=1)) / mean if mean > 0 else None


def is_unstable(cv: float | None) -> bool:
    return cv is not None and cv == cv and cv > UNSTABLE_CV
