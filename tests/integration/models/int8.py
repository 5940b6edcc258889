"""PT2E int8 (XNNPACK's symmetric config) of float models: `int8.py:three_convs_int8`, `int8.py:tiny_cnn_int8`.

`three_convs` is imported (so its edits change the export's cache key); configs/models/tiny_cnn.py
lies outside this folder and is loaded by path, as tiny_mlp_int8.py does.
"""

import importlib.util
from pathlib import Path

import three_convs
import torch

CONFIGS = Path(__file__).resolve().parents[3] / "configs" / "models"


def _quantized(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config())
    prepared = prepare_pt2e(torch.export.export(model, inputs).module(), quantizer)
    prepared(*inputs)
    return convert_pt2e(prepared), inputs


def three_convs_int8() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return _quantized(*three_convs.build())


def tiny_cnn_int8() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    spec = importlib.util.spec_from_file_location("int8_tiny_cnn", CONFIGS / "tiny_cnn.py")
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    return _quantized(*base.build())
