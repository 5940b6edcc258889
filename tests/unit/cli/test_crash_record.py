"""cli/logs.py record_crash: a cache that cannot take the traceback never adds a traceback of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.cli import main


def test_an_internal_error_with_an_unwritable_cache_is_still_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("ETFARM_CACHE_DIR", str(tmp_path / "a-file" / "cache"))  # nothing can be made under a file

    def broken() -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("orchestrator.cli.version_line", broken)  # where --version calls it
    assert main(["--version"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == ["error: internal error (bug): RuntimeError: a bug; traceback not saved (the cache: "
                                "Not a directory)"], err
