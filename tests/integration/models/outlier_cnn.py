"""A small CNN built to lose accuracy in one known layer under static int8.

`stem`'s channel 0 is always zero after the ReLU (no weights, a negative bias), and every filter of `lossy` gives
that dead channel a weight 1000 times its others. Per-channel int8 weights take their scale from each filter's
largest weight, so the live weights all round to zero: `lossy`'s output is lost in int8 while the layers before
it keep theirs. A per-layer accuracy table must name `lossy`.
"""

import torch
from torch import nn


class OutlierCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, kernel_size=3, padding=1)
        self.act = nn.ReLU()
        self.lossy = nn.Conv2d(8, 8, kernel_size=3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(8, 10)
        with torch.no_grad():
            self.stem.weight[0] = 0.0
            self.stem.bias[0] = -1.0  # channel 0 is dead after the ReLU
            self.lossy.weight[:, 0] = 1000.0 * self.lossy.weight.abs().max()  # on the dead channel: no signal
            self.lossy.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.pool(self.lossy(self.act(self.stem(x)))), 1))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return OutlierCNN().eval(), (torch.randn(1, 3, 16, 16),)
