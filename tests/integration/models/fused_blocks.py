"""Ops that reach XNNPACK fused: what one kernel runs is several ops of the model.

- conv -> batch norm -> ReLU: the lowering folds the batch norm and the ReLU into the convolution;
- zero pad -> depthwise conv -> clamp: serialized as three nodes, XNNPACK fuses them at load time;
- Linear (with bias) -> ReLU: one fully-connected kernel with the ReLU folded in.
"""

import torch
from torch import nn
from torch.nn import functional as F


class FusedBlocks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.ReLU()
        self.dw = nn.Conv2d(8, 8, kernel_size=3, groups=8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4, bias=True)
        self.fc_act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.bn(self.conv(x)))
        x = self.dw(F.pad(x, (1, 1, 1, 1)))
        x = torch.clamp(x, -1.0, 1.0)
        x = torch.flatten(self.pool(x), 1)
        return self.fc_act(self.fc(x))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    model = FusedBlocks().eval()
    model.bn.running_mean.uniform_(-0.1, 0.1)
    model.bn.running_var.uniform_(0.5, 1.5)
    return model, (torch.randn(1, 3, 16, 16),)
