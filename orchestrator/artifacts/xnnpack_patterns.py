"""XNNPACK's lowering matches two sets of pattern graphs against every model (bilinear upsampling and scaled
dot-product attention), and it builds those patterns in every process by exporting small modules through
torch.export and to_edge: 4.5 of the 10 CPU-seconds of lowering tiny_cnn, whatever the model holds (cProfile,
benchmarks/README.md "Exports").

A pattern matches only nodes whose targets equal its own (torch's SubgraphMatcher compares call_function targets),
so a graph that lacks an op every pattern of a set holds (an anchor) cannot match any of them. For such a graph the
pass skips building and matching its patterns and does the rest of what it does; the program is the same. The
anchors are checked against the installed ExecuTorch's patterns by tests/integration/test_xnnpack_patterns.py, so
an ExecuTorch whose patterns change fails a test instead of lowering differently.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

# The ops every pattern of a pass holds (edge dialect), by the pass's module and class.
ANCHORS: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    ("convert_to_upsample_bilinear2d", "ConvertToUpsampleBilinear2d"): (("upsample_bilinear2d", "vec"),),
    ("convert_to_sdpa", "ConvertToSDPAPass"): (("_softmax", "default"), ("bmm", "default")),
}


def anchor_ops(anchors: Sequence[tuple[str, str]]) -> tuple[Any, ...]:
    """The edge-dialect operators named by (op, overload) pairs."""
    from executorch.exir.dialects._ops import ops as exir_ops

    return tuple(getattr(getattr(exir_ops.edge.aten, op), overload) for op, overload in anchors)


def can_hold(graph: Any, anchors: Sequence[Any]) -> bool:
    """Whether `graph` calls every one of `anchors` (else no pattern holding them all can match it)."""
    targets = [node.target for node in graph.nodes if node.op == "call_function"]
    return all(any(target == anchor for target in targets) for anchor in anchors)


@functools.cache
def skip_patterns_no_graph_can_match() -> None:
    """Make XNNPACK's pattern passes skip building their patterns for a graph that lacks their anchors (once per
    process: the passes are classes shared by every lowering)."""
    import importlib

    for (module, name), anchors in ANCHORS.items():
        pass_type = getattr(importlib.import_module(f"executorch.backends.xnnpack._passes.{module}"), name)
        pass_type.call = _guarded(pass_type, anchor_ops(anchors))


def _guarded(pass_type: type, anchors: tuple[Any, ...]) -> Callable[[Any, Any], Any]:
    from torch.fx.passes.infra.pass_base import PassResult

    original = pass_type.call

    @functools.wraps(original)
    def call(self: Any, graph_module: Any) -> Any:
        if can_hold(graph_module.graph, anchors):
            return original(self, graph_module)
        # what the pass does after matching nothing: recompile, then its base pass (XNNPACKPass's parent)
        graph_module.recompile()
        return PassResult(super(pass_type, self).call(graph_module).graph_module, True)

    return call
