import os
from pathlib import Path

import pytest

from orchestrator.artifacts.modelspec import parse_model_spec, parse_model_specs
from orchestrator.base.errors import ModelSpecError, UsageError


def test_file_spec_resolves_path_factory_and_name(tmp_path: Path) -> None:
    model = tmp_path / "my_net.py"
    model.write_text("def build():\n    pass\n")
    spec = parse_model_spec(f"{model}:build")
    assert (spec.kind, spec.name, spec.factory, spec.source) == ("file", "my_net", "build", model.resolve())


def test_module_spec_resolves_without_importing() -> None:
    spec = parse_model_spec("json.decoder:JSONDecoder")
    assert spec.kind == "module" and spec.module == "json.decoder" and spec.source.name == "decoder.py"
    assert spec.name == "JSONDecoder"  # the factory says which model (docs/guide/model-zoo.md)


def test_pte_spec(tmp_path: Path) -> None:
    pte = tmp_path / "m.pte"
    pte.write_bytes(b"x")
    spec = parse_model_spec(str(pte), name="mine")
    assert (spec.kind, spec.name) == ("pte", "mine")


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty model spec"),
        ("nofactory.py", "has no factory"),
        ("missing/file.py:build", "no such file"),
        ("model.pte", "no such .pte"),
        ("x.py:1bad", "not a valid factory name"),
        ("no_such_module_xyz:build", "cannot find module"),
        ("bad-module!:build", "neither a .py file nor a module"),
    ],
)
def test_bad_specs_name_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(ModelSpecError, match=fragment):
        parse_model_spec(text)


def test_a_model_path_that_is_no_file_is_named_as_what_it_is(tmp_path: Path) -> None:
    """Issue 31's words: a directory or a pipe named as the model file was called 'no such file'."""
    (tmp_path / "dir.py").mkdir()
    (tmp_path / "dir.pte").mkdir()
    os.mkfifo(tmp_path / "pipe.py")
    for path, factory, problem in (("dir.py", ":build", "is a directory, not a file"), ("dir.pte", "", "is a directory, not a file"),
                                   ("pipe.py", ":build", "not a regular file (a pipe or a device)")):
        text = f"{tmp_path / path}{factory}"
        with pytest.raises(ModelSpecError) as info:
            parse_model_spec(text)
        assert str(info.value) == f"model spec {text!r}: {tmp_path / path}: {problem}"


def test_bad_model_name(tmp_path: Path) -> None:
    model = tmp_path / "m.py"
    model.write_text("")
    with pytest.raises(ModelSpecError, match="model name"):
        parse_model_spec(f"{model}:build", name="../evil")


def test_a_factory_that_says_which_model_names_it_a_builder_leaves_the_files_name(tmp_path: Path) -> None:
    """docs/guide/model-zoo.md, "Model names": `hf_models.py:bert_tiny` is bert_tiny; `tiny_cnn.py:build` and
    `tiny_llama.py:build_deep` are named after their file, as before."""
    models = tmp_path / "hf_models.py"
    models.write_text("def bert_tiny():\n    pass\ndef vit_tiny():\n    pass\n")
    other = tmp_path / "other.py"
    other.write_text("def build():\n    pass\ndef build_deep():\n    pass\ndef make():\n    pass\n")
    specs = parse_model_specs([f"{models}:bert_tiny", f"{models}:vit_tiny", f"{other}:build"])
    assert [s.name for s in specs] == ["bert_tiny", "vit_tiny", "other"]
    assert parse_model_spec(f"{other}:build_deep").name == "other"
    assert parse_model_spec(f"{other}:make").name == "other"
    assert parse_model_spec("orchestrator.cli:program").name == "program"  # a module's factory alike


def test_builders_of_one_file_get_distinct_names(tmp_path: Path) -> None:
    models = tmp_path / "models.py"
    models.write_text("def build():\n    pass\ndef build_deep():\n    pass\n")
    other = tmp_path / "other.py"
    other.write_text("def build():\n    pass\n")
    specs = parse_model_specs([f"{models}:build", f"{models}:build_deep", f"{other}:build"])
    assert [s.name for s in specs] == ["models-build", "models-build_deep", "other"]


def test_explicit_names_one_per_model_in_order(tmp_path: Path) -> None:
    models = tmp_path / "models.py"
    models.write_text("def a():\n    pass\ndef b():\n    pass\n")
    specs = parse_model_specs([f"{models}:a", f"{models}:b"], ["first", "second"])
    assert [s.name for s in specs] == ["first", "second"]
    with pytest.raises(UsageError, match="--name given 1 time"):
        parse_model_specs([f"{models}:a", f"{models}:b"], ["first"])


def test_remaining_name_clash_is_a_usage_error(tmp_path: Path) -> None:
    models = tmp_path / "models.py"
    models.write_text("def a():\n    pass\n")
    with pytest.raises(UsageError, match="model names must be unique in a job: 'same'"):
        parse_model_specs([f"{models}:a", f"{models}:a"], ["same", "same"])
    with pytest.raises(UsageError, match="'a' (.*models.py:a listed 2 times)"):  # the same spec twice
        parse_model_specs([f"{models}:a", f"{models}:a"])


def test_a_model_files_classes_are_found_by_their_modules_name(tmp_path: Path) -> None:
    """torch.export's strict tracing (an export recipe's) looks a model's class up by its module's name."""
    import sys

    from orchestrator.artifacts.modelspec import call_factory

    source = tmp_path / "net.py"
    source.write_text("class Net:\n    pass\n\ndef build():\n    return Net()\n")
    made = call_factory(parse_model_spec(f"{source}:build"))
    assert sys.modules[type(made).__module__].Net is type(made)
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no')\n")
    with pytest.raises(ModelSpecError, match="importing broken.py raised RuntimeError: no"):
        call_factory(parse_model_spec(f"{broken}:build"))
    assert not [name for name, module in sys.modules.items() if getattr(module, "__file__", None) == str(broken)]


def test_model_code_turns_what_the_users_code_raises_into_its_one_line_error() -> None:
    from orchestrator.artifacts.modelspec import model_code
    from orchestrator.base.errors import DataError

    with pytest.raises(ModelSpecError) as err, model_code("m.py:build", "its calibration"):
        raise ValueError("line one\nline two")
    assert str(err.value) == "model spec 'm.py:build': its calibration raised ValueError: line one | line two"
    with pytest.raises(ModelSpecError, match=r"^recipe 'r.py:make': its calibration_inputs_fn raised RecursionError"), \
            model_code("r.py:make", "its calibration_inputs_fn", kind="recipe"):
        raise RecursionError("maximum recursion depth exceeded")
    with pytest.raises(DataError, match="^etfarm's own$"), model_code("m.py:build", "x"):  # etfarm's errors pass
        raise DataError("etfarm's own")
