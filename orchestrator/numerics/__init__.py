"""Numerical debugging per device: which op diverges, on which device.

Public API (torch-free):
- `analyze_run(run, metric, threshold, reference_device) -> NumericsReport` (`run`: a results.record.RunRecord)
- `analyze_job(job, root, ...)`: the same for a job in memory (`etfarm run --numerics`)
- `write_files(report, run_dir)`: DIR/<device>/<model>/numerics.csv and DIR/numerics.json
- `render_text(report)`, `render_markdown(report)`, `to_json(report)`
- `report.rows()`: flat frozen `NumericsRow`s (one per compared op), what a results store inserts;
  `csv_rows(model_numerics)`: the same as numerics.csv dicts
- lower level: `gaps_against_reference` (Inspector's calculate_numeric_gap), `gaps_between_devices`,
  `load_reference`, `runtime_outputs`, and the metrics in `numerics.metrics`.
"""

from orchestrator.numerics.analyze import (
    analyze_job,
    analyze_run,
    gaps_against_reference,
    gaps_between_devices,
)
from orchestrator.numerics.metrics import DEFAULT_THRESHOLDS, Gap, Metric
from orchestrator.numerics.model import (
    AGAINST_AOT,
    Comparison,
    ModelNumerics,
    NumericsReport,
    OpGap,
)
from orchestrator.numerics.render import (
    csv_rows,
    render_markdown,
    render_text,
    to_json,
    write_files,
)
from orchestrator.numerics.sources import load_reference, runtime_outputs

__all__ = [
    "AGAINST_AOT", "DEFAULT_THRESHOLDS", "Comparison", "Gap", "Metric", "ModelNumerics", "NumericsReport", "NumericsRow", "OpGap",
    "analyze_job", "analyze_run", "csv_rows", "gaps_against_reference", "gaps_between_devices", "load_reference",
    "render_markdown", "render_text", "runtime_outputs", "to_json", "write_files",
]
