"""configs/models/tiny_mlp.py quantized to int8 with PT2E (XNNPACK's symmetric config): a quantized variant.

Lowered with the portable backend it runs ExecuTorch's quantize/dequantize kernels, so the debug
buffer holds int8 tensors beside float ones.
"""

import importlib.util
from pathlib import Path

import torch

BASE = Path(__file__).resolve().parents[3] / "configs" / "models" / "tiny_mlp.py"


def build() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    import executorch.kernels.quantized  # noqa: F401  (registers the q/dq out variants the export needs)
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    spec = importlib.util.spec_from_file_location("tiny_mlp", BASE)
    base = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(base)
    model, inputs = base.build()
    prepared = prepare_pt2e(torch.export.export(model, inputs).module(), XNNPACKQuantizer().set_global(get_symmetric_quantization_config()))
    prepared(*inputs)
    return convert_pt2e(prepared), inputs
