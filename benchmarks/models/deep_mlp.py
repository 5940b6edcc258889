"""A 40-layer MLP: enough operators and work per iteration for timing comparisons."""

import torch
from torch import nn

LAYERS = 40
WIDTH = 256


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    layers: list[nn.Module] = []
    for _ in range(LAYERS // 2):
        layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
    return nn.Sequential(*layers).eval(), (torch.randn(8, WIDTH),)
