"""Model code that raises where etfarm calls it (issue 35 item 2): a calibration sequence whose items raise, a recipe
factory whose own calibration raises, a recipe factory that raises, a forward that raises. Each is the model's error
in one line naming the spec, never an internal error of etfarm's."""

import dataclasses
from collections.abc import Sequence

import torch

from orchestrator.artifacts.calibration import CalibratedModel


class Batches(Sequence):
    """The user's sequence of calibration batches: it has a length, its items raise."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, index):
        raise ValueError("getitem from model code")


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 4)).eval()


def calibration_raises() -> CalibratedModel:
    return CalibratedModel(_mlp(), (torch.randn(1, 8),), calibration=Batches())


def plain():
    return _mlp(), (torch.randn(1, 8),)


def recipe_calibration_raises():
    from executorch.backends.xnnpack.recipes.xnnpack_recipe_types import XNNPackRecipeType
    from executorch.export import ExportRecipe

    recipe = ExportRecipe.get_recipe(XNNPackRecipeType.PT2E_INT8_STATIC_PER_TENSOR)

    def batches():
        raise KeyError("from the recipe's calibration")
        yield  # a generator, as calibration_inputs_fn's are

    return dataclasses.replace(recipe, quantization_recipe=dataclasses.replace(recipe.quantization_recipe,
                                                                               calibration_inputs_fn=batches))


def recipe_raises():
    raise RuntimeError("no recipe today")


class _Broken(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise IndexError("forward from model code")


def forward_raises():
    return _Broken(), (torch.randn(1, 8),)
