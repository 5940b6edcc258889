"""The guard on XNNPACK's pattern passes (artifacts/xnnpack_patterns.py), on stand-in graphs and passes: a graph
that lacks an anchor never reaches the pass's pattern matching, one that has them all does. Whether the anchors are
in ExecuTorch's real patterns is tests/integration/test_xnnpack_patterns.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.artifacts.xnnpack_patterns import _guarded, can_hold


@dataclass
class Node:
    target: Any
    op: str = "call_function"


@dataclass
class Graph:
    nodes: list[Node]


@dataclass
class GraphModule:
    graph: Graph
    recompiled: int = 0

    def recompile(self) -> None:
        self.recompiled += 1


@dataclass
class Result:
    graph_module: GraphModule


@dataclass
class Base:
    calls: list[str] = field(default_factory=list)

    def call(self, graph_module: GraphModule) -> Result:
        self.calls.append("base")
        return Result(graph_module)


class Matching(Base):
    def call(self, graph_module: GraphModule) -> Result:
        self.calls.append("patterns built and matched")
        return super().call(graph_module)


def _module(*targets: str) -> GraphModule:
    return GraphModule(Graph([Node("x", op="placeholder"), *(Node(t) for t in targets), Node("out", op="output")]))


def test_a_graph_holds_the_anchors_only_when_it_calls_every_one() -> None:
    assert can_hold(_module("softmax", "bmm", "add").graph, ("softmax", "bmm"))
    assert not can_hold(_module("softmax", "add").graph, ("softmax", "bmm"))
    assert not can_hold(_module().graph, ("upsample",))
    # a placeholder or output named like an anchor is not a call of it
    assert not can_hold(GraphModule(Graph([Node("upsample", op="placeholder")])).graph, ("upsample",))


def test_the_guarded_pass_matches_only_a_graph_that_could_hold_a_pattern() -> None:
    call = _guarded(Matching, ("softmax", "bmm"))
    holding, lacking = Matching(), Matching()
    module = _module("softmax", "bmm")
    assert call(holding, module).graph_module is module
    assert holding.calls == ["patterns built and matched", "base"]
    module = _module("conv", "relu")
    result = call(lacking, module)
    assert lacking.calls == ["base"] and result.graph_module is module and module.recompiled == 1
    assert result.modified  # torch's PassResult, as the real pass returns
