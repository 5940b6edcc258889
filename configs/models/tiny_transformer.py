"""A tiny transformer encoder (2 layers, self-attention + feed-forward), BERT-style module names.

For op naming: every profiled op should say where it sits, e.g. `encoder.layers.1.attention.query`.
Seeded and small: exports in seconds, runs in well under a millisecond.
"""

import math

import torch
from torch import nn

WIDTH, HEADS, TOKENS, LAYERS = 32, 4, 16, 2


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.query = nn.Linear(WIDTH, WIDTH)
        self.key = nn.Linear(WIDTH, WIDTH)
        self.value = nn.Linear(WIDTH, WIDTH)
        self.output = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, _ = x.shape
        shape = (batch, tokens, HEADS, WIDTH // HEADS)
        q = self.query(x).view(shape).transpose(1, 2)
        k = self.key(x).view(shape).transpose(1, 2)
        v = self.value(x).view(shape).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(WIDTH // HEADS)
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.output(context.transpose(1, 2).reshape(batch, tokens, WIDTH))


class FeedForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(WIDTH, 4 * WIDTH)
        self.down = nn.Linear(4 * WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


class EncoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention = SelfAttention()
        self.attention_norm = nn.LayerNorm(WIDTH)
        self.feed_forward = FeedForward()
        self.output_norm = nn.LayerNorm(WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.attention_norm(x + self.attention(x))
        return self.output_norm(x + self.feed_forward(x))


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer() for _ in range(LAYERS)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class TinyTransformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()
        self.classifier = nn.Linear(WIDTH, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.encoder(x).mean(dim=1))


def build() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)  # fixed weights and inputs: the cache and the reference stay stable
    return TinyTransformer().eval(), (torch.randn(1, TOKENS, WIDTH),)
