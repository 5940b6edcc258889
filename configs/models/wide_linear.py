"""Eight Linear(1024) layers: 32 MiB of fp32 weights, the model of docs/guide/memory-and-energy.md.

`build` is the whole stack; `build_small` two layers of it (8 MiB), for comparing two sizes."""

import torch
from torch import nn


def _stack(layers: int) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(layers)])
    return model.eval(), (torch.randn(1, 1024),)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return _stack(8)


def build_small() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    return _stack(2)
