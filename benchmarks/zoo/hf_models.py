"""Real architectures from Hugging Face transformers with seeded random weights: no download, no hub.

Each factory builds its model from a configuration written here (small but real: the architecture's own
blocks, fewer and narrower, so an export takes seconds) and returns `(module, example_inputs)` as every etfarm
model spec does; the module returns one tensor (logits, or the encoder's last hidden state). A model spec is
`benchmarks/zoo/hf_models.py:<factory>`, and the model is named after its factory (`bert_tiny`).

Needs the `zoo` extra (`pip install -e ".[zoo]"`: transformers); imported by etfarm only when exported.
PyPI's torchvision and timm do not install beside torch 2.13.0 here, so every architecture is transformers'.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import transformers as tf

SEED = 0
IMAGE = 64  # pixels a side: small, yet every vision model below keeps all its stages


class Head(torch.nn.Module):
    """A transformers model as an etfarm model: one tensor out (`attribute` of its output)."""

    def __init__(self, model: torch.nn.Module, attribute: str) -> None:
        super().__init__()
        self.model = model
        self.attribute = attribute

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(*inputs), self.attribute)


def _built(make: Callable[[], torch.nn.Module], attribute: str, *inputs: torch.Tensor) -> tuple[torch.nn.Module, tuple]:
    torch.manual_seed(SEED)
    return Head(make().eval(), attribute), inputs


def _image(size: int = IMAGE) -> torch.Tensor:
    return torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(SEED))


def _tokens(length: int = 32, vocab: int = 1000) -> torch.Tensor:
    return torch.randint(0, vocab, (1, length), generator=torch.Generator().manual_seed(SEED))


# Conv nets ---------------------------------------------------------------------------------------------------

def mobilenet_v2() -> tuple[torch.nn.Module, tuple]:
    config = tf.MobileNetV2Config(image_size=96, depth_multiplier=0.35, num_labels=100)
    return _built(lambda: tf.MobileNetV2ForImageClassification(config), "logits", _image(96))


def mobilenet_v1() -> tuple[torch.nn.Module, tuple]:
    config = tf.MobileNetV1Config(image_size=96, depth_multiplier=0.25, num_labels=100)
    return _built(lambda: tf.MobileNetV1ForImageClassification(config), "logits", _image(96))


def resnet() -> tuple[torch.nn.Module, tuple]:
    config = tf.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1],
                             layer_type="basic", num_labels=100)
    return _built(lambda: tf.ResNetForImageClassification(config), "logits", _image())


def efficientnet() -> tuple[torch.nn.Module, tuple]:
    config = tf.EfficientNetConfig(image_size=IMAGE, width_coefficient=0.25, depth_coefficient=0.25, hidden_dim=320,
                                   num_labels=100)
    return _built(lambda: tf.EfficientNetForImageClassification(config), "logits", _image())


def convnext() -> tuple[torch.nn.Module, tuple]:
    config = tf.ConvNextConfig(hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], num_labels=100)
    return _built(lambda: tf.ConvNextForImageClassification(config), "logits", _image())


def mobilevit() -> tuple[torch.nn.Module, tuple]:
    config = tf.MobileViTConfig(image_size=IMAGE, hidden_sizes=[32, 48, 64], neck_hidden_sizes=[8, 16, 24, 32, 40, 48, 160],
                                num_attention_heads=2, num_labels=100)
    return _built(lambda: tf.MobileViTForImageClassification(config), "logits", _image())


# Vision transformers -----------------------------------------------------------------------------------------

_VIT = {"image_size": IMAGE, "patch_size": 8, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 128, "num_labels": 100}


def vit() -> tuple[torch.nn.Module, tuple]:
    return _built(lambda: tf.ViTForImageClassification(tf.ViTConfig(**_VIT)), "logits", _image())


def deit() -> tuple[torch.nn.Module, tuple]:
    return _built(lambda: tf.DeiTForImageClassification(tf.DeiTConfig(**_VIT)), "logits", _image())


def swin() -> tuple[torch.nn.Module, tuple]:
    config = tf.SwinConfig(image_size=IMAGE, patch_size=4, embed_dim=16, depths=[1, 1, 1], num_heads=[1, 2, 4],
                           window_size=4, num_labels=100)
    return _built(lambda: tf.SwinForImageClassification(config), "logits", _image())


# Text encoders -----------------------------------------------------------------------------------------------

def bert_tiny() -> tuple[torch.nn.Module, tuple]:
    config = tf.BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=128, max_position_embeddings=64)
    return _built(lambda: tf.BertModel(config, add_pooling_layer=False), "last_hidden_state", _tokens())


def distilbert() -> tuple[torch.nn.Module, tuple]:
    config = tf.DistilBertConfig(vocab_size=1000, dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                                 max_position_embeddings=64, num_labels=4)
    return _built(lambda: tf.DistilBertForSequenceClassification(config), "logits", _tokens())


# Speech encoders ---------------------------------------------------------------------------------------------

def whisper_encoder() -> tuple[torch.nn.Module, tuple]:
    config = tf.WhisperConfig(d_model=64, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=128,
                              decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=128, num_mel_bins=80,
                              max_source_positions=100)
    features = torch.randn(1, 80, 200, generator=torch.Generator().manual_seed(SEED))  # 2 x max_source_positions
    return _built(lambda: tf.WhisperModel(config).get_encoder(), "last_hidden_state", features)


def wav2vec2() -> tuple[torch.nn.Module, tuple]:
    config = tf.Wav2Vec2Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                               conv_dim=(32, 32, 32), conv_stride=(5, 2, 2), conv_kernel=(10, 3, 3),
                               num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
    audio = torch.randn(1, 4000, generator=torch.Generator().manual_seed(SEED))  # a quarter second at 16 kHz
    return _built(lambda: tf.Wav2Vec2Model(config), "last_hidden_state", audio)


# Detection and segmentation ----------------------------------------------------------------------------------

def segformer() -> tuple[torch.nn.Module, tuple]:
    config = tf.SegformerConfig(num_encoder_blocks=4, depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 64, 128],
                                num_attention_heads=[1, 2, 2, 4], decoder_hidden_size=64, num_labels=8)
    return _built(lambda: tf.SegformerForSemanticSegmentation(config), "logits", _image())


def yolos() -> tuple[torch.nn.Module, tuple]:
    config = tf.YolosConfig(**{**_VIT, "image_size": [IMAGE, IMAGE], "num_labels": 8}, num_detection_tokens=10)
    return _built(lambda: tf.YolosForObjectDetection(config), "logits", _image())


FACTORIES: dict[str, Callable[[], tuple[Any, tuple]]] = {
    f.__name__: f for f in (mobilenet_v2, mobilenet_v1, resnet, efficientnet, convnext, mobilevit, vit, deit, swin,
                            bert_tiny, distilbert, whisper_encoder, wav2vec2, segformer, yolos)
}
