"""The zoo's models and recipes (docs/guide/model-zoo.md): what `python -m benchmarks.bench_zoo` measures.

Every architecture family users reach for first, each as an etfarm model spec: conv nets, a hybrid, vision
transformers, text encoders, speech encoders, a segmentation and a detection model (transformers, random
weights, benchmarks/zoo/hf_models.py), and ExecuTorch's own tiny Llama (export_llama, configs/models/tiny_llama.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HF = ROOT / "benchmarks" / "zoo" / "hf_models.py"
RECIPES = ("fp32", "int8-static", "int8-dynamic", "int8da-int4w")


@dataclass(frozen=True)
class ZooModel:
    name: str  # the model's name in etfarm (its factory's, or the file's for tiny_llama)
    family: str
    spec: str


def _hf(name: str, family: str) -> ZooModel:
    return ZooModel(name, family, f"{HF}:{name}")


ZOO: tuple[ZooModel, ...] = (
    _hf("mobilenet_v2", "conv net"),
    _hf("mobilenet_v1", "conv net"),
    _hf("resnet", "conv net"),
    _hf("efficientnet", "conv net"),
    _hf("convnext", "conv net"),
    _hf("mobilevit", "conv + attention"),
    _hf("vit", "vision transformer"),
    _hf("deit", "vision transformer"),
    _hf("swin", "vision transformer"),
    _hf("bert_tiny", "text encoder"),
    _hf("distilbert", "text encoder"),
    _hf("whisper_encoder", "speech encoder"),
    _hf("wav2vec2", "speech encoder"),
    _hf("segformer", "segmentation"),
    _hf("yolos", "detection"),
    ZooModel("tiny_llama", "LLM (export_llama)", f"{ROOT / 'configs' / 'models' / 'tiny_llama.py'}:build"),
)


def zoo_model(name: str) -> ZooModel:
    found = {m.name: m for m in ZOO}
    if name not in found:
        raise SystemExit(f"--models: no zoo model {name!r}; the zoo has {', '.join(found)}")
    return found[name]
