"""Three convolutions under distinct attribute names, each called on its own line of forward.

XNNPACK runs the 3x3 ones as convolutions and the 1x1 `squeeze` as a fully-connected GEMM: the
kernel mapping must still name each one.
"""

import torch
from torch import nn


class ThreeConvs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.body = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.squeeze = nn.Conv2d(16, 8, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = self.body(x)
        return self.squeeze(x)


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return ThreeConvs().eval(), (torch.randn(1, 3, 16, 16),)
