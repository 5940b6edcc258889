"""Model specs (docs/architecture.md, "Contracts: model spec"): `file.py:factory`, `package.module:factory`, or a `.pte`.

Parsing is cheap and torch-free; `call_factory` imports the model (and so, usually,
torch) only when an export actually has to happen. A factory returns `(module, inputs)`, or an
`LlmRecipe` (orchestrator/artifacts/llm.py) for an LLM that etfarm exports with export_llama.

The user's code runs inside `user_code`: what it prints goes to stderr (stdout is etfarm's: its
tables, one JSON document under --json), and its `sys.exit()` is a usage error naming the spec,
never etfarm's own exit.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from orchestrator.base.errors import EtfarmError, ModelSpecError, UsageError, not_a_file, said

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODULE_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
SPEC_FORMS = "'path/to/file.py:factory', 'package.module:factory' or 'path/to/model.pte'"
# Names become directory and file names (run directories, the export cache, the store): bounded.
NAME_MAX = 100
LOADED_PREFIX = "etfarm_model_"  # a model file is imported as etfarm_model_<hash>: its classes' module names say so


@dataclass(frozen=True)
class ModelSpec:
    text: str  # as the user wrote it
    kind: str  # "file", "module" or "pte"
    name: str  # model name used in run directories and reports
    source: Path  # the .py file defining the factory, or the .pte
    factory: str | None = None
    module: str | None = None


def parse_model_spec(text: str, name: str | None = None) -> ModelSpec:
    """Resolve a model spec to its source file without importing it."""
    text = text.strip()
    if not text:
        raise ModelSpecError(f"empty model spec; expected {SPEC_FORMS}")
    if text.endswith(".pte") and ":" not in text:
        path = Path(text).expanduser()
        if not path.is_file():
            what = "no such .pte file" if not os.path.lexists(path) else f"{text}: {not_a_file(path)}"
            raise ModelSpecError(f"model spec {text!r}: {what}")
        return ModelSpec(text, "pte", _model_name(name, path.stem), path.resolve())
    target, sep, factory = text.rpartition(":")
    if not sep or not target:
        raise ModelSpecError(f"model spec {text!r} has no factory; expected {SPEC_FORMS}")
    if not _IDENTIFIER.match(factory):
        raise ModelSpecError(f"model spec {text!r}: {factory!r} is not a valid factory name")
    if target.endswith(".py") or "/" in target:
        path = Path(target).expanduser()
        if not path.is_file():
            raise ModelSpecError(f"model spec {text!r}: {target}: {not_a_file(path)}")
        if path.suffix != ".py":
            raise ModelSpecError(f"model spec {text!r}: {target!r} is not a .py file")
        return ModelSpec(text, "file", _model_name(name, default_name(path.stem, factory)), path.resolve(), factory=factory)
    if not _MODULE_PATH.match(target):
        raise ModelSpecError(f"model spec {text!r}: {target!r} is neither a .py file nor a module name")
    try:
        found = importlib.util.find_spec(target)
    except (ImportError, ValueError) as exc:
        raise ModelSpecError(f"model spec {text!r}: cannot find module {target!r} ({exc})") from None
    if found is None or not found.origin or not Path(found.origin).is_file():
        raise ModelSpecError(f"model spec {text!r}: cannot find module {target!r}")
    return ModelSpec(
        text, "module", _model_name(name, default_name(target.rsplit(".", 1)[-1], factory)), Path(found.origin),
        factory=factory, module=target
    )


def parse_model_specs(texts: Sequence[str], names: Sequence[str | None] = (),
                      hint: str = "give each --model its own --name") -> list[ModelSpec]:
    """Resolve a job's model specs and give each a unique name, before anything runs.

    Naming rule: an explicit name (`--name`, one per `--model`, in order; None: none given) wins;
    otherwise `default_name`: the factory's name when it says which model, else the file's (or module's,
    or .pte's) stem, except that several builders of one source in the same job are named
    `<stem>-<factory>` (`models.py:build`, `models.py:build_deep` -> `models-build`, `models-build_deep`).
    A name that still occurs twice (the same model listed twice, too) is a usage error; `hint` says
    how to fix it.
    """
    if names and len(names) != len(texts):
        raise UsageError(f"--name given {len(names)} time(s) for {len(texts)} --model(s); give one --name per --model, in order")
    given = list(names) if names else [None] * len(texts)
    specs = [parse_model_spec(text, given[i]) for i, text in enumerate(texts)]
    unnamed = {(s.source, s.factory) for s, name in zip(specs, given, strict=True)
               if s.factory and name is None and s.name != s.factory}  # named after their file
    factories_per_source = Counter(source for source, _ in unnamed)  # distinct factories: a spec listed twice is a clash
    specs = [replace(s, name=_model_name(None, f"{s.name}-{s.factory}"))
             if name is None and s.factory and factories_per_source[s.source] > 1 else s
             for s, name in zip(specs, given, strict=True)]
    clashes = [name for name, count in Counter(s.name for s in specs).items() if count > 1]
    if clashes:
        def why(name: str) -> str:
            texts = [s.text for s in specs if s.name == name]
            return f"{texts[0]} listed {len(texts)} times" if len(set(texts)) == 1 else " and ".join(texts)

        which = ", ".join(f"{name!r} ({why(name)})" for name in clashes)
        raise UsageError(f"model names must be unique in a job: {which}; {hint}")
    return specs


# A builder's name says how a model is made, not which: `tiny_cnn.py:build` is tiny_cnn, as is
# `tiny_llama.py:build_deep`'s file. Any other factory name says which model (`hf_models.py:bert_tiny`).
_BUILDER_WORDS = ("build", "make", "create", "get", "load", "model", "factory", "main")
_BUILDER_PREFIXES = ("build_", "make_", "create_", "get_", "load_")


def default_name(stem: str, factory: str) -> str:
    """A model's name without --name (docs/guide/model-zoo.md, "Model names"): its factory's when the factory's
    name says which model (a file of several models, `hf_models.py:bert_tiny` -> `bert_tiny`), else the file's
    (or module's) stem, as a file that names one model (`tiny_cnn.py:build` -> `tiny_cnn`)."""
    if factory in _BUILDER_WORDS or factory.startswith(_BUILDER_PREFIXES) or factory.startswith("_"):
        return stem
    return factory


def _model_name(explicit: str | None, default: str) -> str:
    name = explicit or default
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", name):
        raise ModelSpecError(f"model name {name[:NAME_MAX]!r} must be letters, digits, '.', '_' or '-'")
    if len(name) > NAME_MAX:
        raise ModelSpecError(f"model name {name[:40]!r}... is {len(name)} characters long; at most {NAME_MAX} "
                             "(give a shorter --name)")
    return name


def call_factory(spec: ModelSpec) -> Any:
    """Import the spec's module and call its factory (the model file decides what it imports: an
    LLM recipe's file need not import torch)."""
    with user_code(spec):
        module = _import_spec_module(spec)
        factory = getattr(module, spec.factory or "", None)
        if factory is None or not callable(factory):
            raise ModelSpecError(f"model spec {spec.text!r}: {spec.source.name} has no callable {spec.factory!r}")
        try:
            with model_code(spec.text, f"factory {spec.factory}()"):
                return factory()
        except ModelSpecError as exc:  # e.g. an LlmRecipe refusing its arguments
            raise exc if str(exc).startswith(f"model spec {spec.text!r}") else ModelSpecError(
                f"model spec {spec.text!r}: {exc}") from None


_SAID_CHARS = 300  # of what the user's exception says: a line, not a dump


@contextlib.contextmanager
def model_code(spec_text: str, doing: str, kind: str = "model spec") -> Iterator[None]:
    """The one guard around code the user wrote (a factory, a calibration sequence, a recipe factory, a forward):
    anything it raises is the model's error, in one line naming the spec and what ran (`doing`), never a bug of
    etfarm's. etfarm's own errors raised from inside pass unchanged."""
    try:
        yield
    except EtfarmError:
        raise
    except Exception as exc:  # noqa: BLE001  (whatever the user's code raised)
        raise ModelSpecError(f"{kind} {spec_text!r}: {doing} raised {type(exc).__name__}: "
                             f"{said(exc)[:_SAID_CHARS]}") from None


@contextlib.contextmanager
def user_code(spec: ModelSpec) -> Iterator[None]:
    """Run the user's model code (its import, its factory, its forward while exporting): whatever it
    prints goes to stderr, Python's and the C level's (fd 1) alike, and `sys.exit()` from it is a
    ModelSpecError naming the spec, so neither can change etfarm's stdout or exit code."""
    with _stdout_to_stderr():
        try:
            yield
        except SystemExit as exc:
            raise ModelSpecError(f"model spec {spec.text!r}: its code called sys.exit({exc.code!r}); a factory "
                                 "returns (module, example_inputs) or raises") from None


class _ToStderr(io.TextIOBase):
    """The user's code's `sys.stdout`: what it writes goes to stderr, and closing it closes nothing of etfarm's."""

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self._target = target

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return self._target.write(text)

    def flush(self) -> None:
        self._target.flush()

    def fileno(self) -> int:
        return self._target.fileno()

    def close(self) -> None:  # a model that closes "stdout" must not close etfarm's stderr
        self.flush()


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 at all: only Python's prints can be moved
        saved = None
    try:
        if saved is not None:
            os.dup2(2, 1)
        with contextlib.redirect_stdout(_ToStderr(sys.stderr)):
            yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def load_factory_result(spec: ModelSpec) -> tuple[Any, tuple[Any, ...]]:
    """Import the spec's module, call its factory, check it returned (nn.Module, inputs tuple)."""
    return check_factory_result(spec, call_factory(spec))


def check_factory_result(spec: ModelSpec, result: Any) -> tuple[Any, tuple[Any, ...]]:
    """A factory's result as (nn.Module, inputs tuple), or a one-line ModelSpecError saying why not.
    (An `LlmRecipe` is the other accepted result; the caller tells them apart first.)"""
    import torch

    if not (isinstance(result, tuple) and len(result) == 2):
        raise ModelSpecError(
            f"model spec {spec.text!r}: {spec.factory}() must return (torch.nn.Module, example_inputs_tuple) "
            f"or an LlmRecipe, got {type(result).__name__}"
        )
    model, inputs = result
    if not isinstance(model, torch.nn.Module):
        raise ModelSpecError(
            f"model spec {spec.text!r}: {spec.factory}() returned {type(model).__name__} where a torch.nn.Module was expected"
        )
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if not isinstance(inputs, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise ModelSpecError(f"model spec {spec.text!r}: example inputs must be a tuple of tensors")
    return model, tuple(inputs)


def _import_spec_module(spec: ModelSpec) -> Any:
    try:
        if spec.kind == "module":
            return importlib.import_module(spec.module or "")
        unique = f"{LOADED_PREFIX}{abs(hash(str(spec.source)))}"
        loader_spec = importlib.util.spec_from_file_location(unique, spec.source)
        if loader_spec is None or loader_spec.loader is None:
            raise ModelSpecError(f"model spec {spec.text!r}: cannot load {spec.source}")
        module = importlib.util.module_from_spec(loader_spec)
        # Known by its name, as importlib's own recipe does: torch.export's strict tracing (an export recipe's)
        # looks the model's class up by its module's name.
        sys.modules[unique] = module
        # Let the model file import its siblings (models/common.py and the like).
        sys.path.insert(0, str(spec.source.parent))
        try:
            loader_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(unique, None)
            raise
        finally:
            sys.path.remove(str(spec.source.parent))
        return module
    except ModelSpecError:
        raise
    except Exception as exc:
        raise ModelSpecError(
            f"model spec {spec.text!r}: importing {spec.source.name} raised {type(exc).__name__}: {exc}"
        ) from None
