"""A stack of DEPTH small Linear+ReLU layers (XNNPACK): the model verdict tests and benchmarks edit.

Copy this file and change DEPTH to make a slower model of the same name: twice the depth is a
2x slowdown, 10 % more layers about a 10 % one.
"""

import torch
from torch import nn

DEPTH = 40
WIDTH = 64


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(DEPTH):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    return nn.Sequential(*layers).eval(), (torch.randn(1, WIDTH),)
