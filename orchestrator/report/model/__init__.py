"""The report's data model: everything a report says, as frozen data, computed once by report/builders/.

The first stage of a report's flow (docs/architecture.md, "Reports"): model -> builders -> page -> render.
Pages, terminal text and the JSON export read these types and compute nothing:
    report: Report and its parts (ModelSection, DeviceLatency, OpStat, SpeedClaim, TrustNote, DeviceFacts, ...)
    llm: LlmSection, LlmDevice, PhaseOp               a model that generated: TTFT, tokens/s, phases
    memory: MemoryRow                                   the memory table
    quantized: RecipeGroup, DeviceRecipes, RecipeRow, LayerSpeed   a model under export recipes, side by side
    comparison: ComparisonView, PairStructure, StructureChange   what an A/B page says around the verdicts
"""

from __future__ import annotations

from orchestrator.report.model.comparison import ComparisonView, PairStructure, StructureChange
from orchestrator.report.model.llm import LlmDevice, LlmSection, PhaseOp
from orchestrator.report.model.memory import MemoryRow
from orchestrator.report.model.quantized import DeviceRecipes, LayerSpeed, RecipeGroup, RecipeRow
from orchestrator.report.model.report import (
    DeviceFacts,
    DeviceLatency,
    DeviceOps,
    Flag,
    FlaggedRun,
    HistoryRow,
    Interval,
    ModelSection,
    OpRatioRow,
    OpStat,
    Report,
    SpeedClaim,
    TracerOverhead,
    TrustNote,
    Versus,
)

__all__ = [
    "ComparisonView", "DeviceFacts", "DeviceLatency", "DeviceOps", "DeviceRecipes", "Flag", "FlaggedRun",
    "HistoryRow", "Interval", "LayerSpeed", "LlmDevice", "LlmSection", "MemoryRow", "ModelSection", "OpRatioRow",
    "OpStat", "PairStructure", "PhaseOp", "RecipeGroup", "RecipeRow", "Report", "SpeedClaim", "StructureChange",
    "TracerOverhead", "TrustNote", "Versus",
]
