"""A configuration that failed (ConfigurationFailed) is remembered in the export cache by its key: the same sources,
versions and recipe are not exported again, the same reason comes back; --force tries again; other errors (a
timeout, the user's own code) are never remembered."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.artifacts import lowering
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.artifacts.recipes import RecipeSpec
from orchestrator.base.errors import ConfigurationFailed, ExportError

REASON = "the host's reference run of 'm.py:build' with recipe int8-dynamic failed: [XNNExecutor.cpp:169] boom"
DYNAMIC = RecipeSpec("int8-dynamic", "int8-dynamic", "PT2E_INT8_DYNAMIC_PER_CHANNEL")


def test_a_failed_configuration_is_not_exported_again_until_forced(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETFARM_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "m.py"
    source.write_text("def build():\n    pass\n")
    spec = parse_model_spec(f"{source}:build")
    calls: list[str] = []

    def fails(*args: object) -> dict:
        calls.append("export")
        raise ConfigurationFailed(REASON)

    monkeypatch.setattr(lowering, "_lower_into", fails)
    said: list[str] = []
    for _ in range(2):
        with pytest.raises(ConfigurationFailed) as caught:
            lowering.export_model(spec, recipe=DYNAMIC, log=said.append)
        assert str(caught.value) == REASON
    assert calls == ["export"] and said[-1].startswith("export failed before: m (recipe int8-dynamic)")
    with pytest.raises(ConfigurationFailed):
        lowering.export_model(spec, recipe=DYNAMIC, force=True)
    assert calls == ["export", "export"]
    source.write_text("def build():\n    return 1\n")  # other sources: another key, exported again
    with pytest.raises(ConfigurationFailed):
        lowering.export_model(spec, recipe=DYNAMIC)
    assert len(calls) == 3


def test_other_export_errors_are_not_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETFARM_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "m.py"
    source.write_text("def build():\n    pass\n")
    calls: list[str] = []

    def times_out(*args: object) -> dict:
        calls.append("export")
        raise ExportError("export_llama failed (timed out): ...")

    monkeypatch.setattr(lowering, "_lower_into", times_out)
    for _ in range(2):
        with pytest.raises(ExportError):
            lowering.export_model(parse_model_spec(f"{source}:build"), recipe=DYNAMIC)
    assert calls == ["export", "export"]
