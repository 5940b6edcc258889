"""What a run measured: the ETDump reader, event blocks, ETRecord linking, samples and statistics, traces.

Public API, imported lazily on first use (PEP 562) so that importing the package stays light:
    etdump: ETDump, read_etdump
    etdump_events: block_key, group_blocks
    etrecord: load_etrecord
    kernel_map: KernelLink, KernelProgram, load_kernel_program (XNNPACK kernels named in the model)
    op_identity: FRAMEWORK_EVENTS, HIDDEN_WHEN_PRINTING, OpIdentity (an op's one key across devices and runs)
    analysis_core: STATS_COLUMNS, SampleSet, collect_samples, summary_records, record_columns
    analysis: analyze_files, summarize
    trace: build_trace, write_trace
"""

from __future__ import annotations

from orchestrator.base.lazy import lazy_api

_API = {
    "ETDump": "etdump",
    "read_etdump": "etdump",
    "block_key": "etdump_events",
    "group_blocks": "etdump_events",
    "load_etrecord": "etrecord",
    "KernelLink": "kernel_map",
    "KernelProgram": "kernel_map",
    "load_kernel_program": "kernel_map",
    "FRAMEWORK_EVENTS": "op_identity",
    "HIDDEN_WHEN_PRINTING": "op_identity",
    "OpIdentity": "op_identity",
    "STATS_COLUMNS": "analysis_core",
    "SampleSet": "analysis_core",
    "collect_samples": "analysis_core",
    "summary_records": "analysis_core",
    "record_columns": "analysis_core",
    "analyze_files": "analysis",
    "summarize": "analysis",
    "build_trace": "trace",
    "write_trace": "trace",
}
__all__ = sorted(_API)

__getattr__ = lazy_api(__name__, _API)
