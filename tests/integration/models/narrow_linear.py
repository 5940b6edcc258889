"""A linear layer 20 features wide: torchao's int4 weights in groups of 32 cannot cover it."""

import torch
from torch import nn


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4)).eval(), (torch.randn(2, 20),)
