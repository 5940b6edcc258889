"""The worker's content-addressed store: ask, send only what is missing, refuse wrong content."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from orchestrator.farm import blobs


class FakeClient:
    """`Client.run` on one in-process 'worker' (unit test: the real one is in tests/integration/test_farm.py)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def run(self, function: Any, *args: Any, workers: list[str], callback_timeout: float) -> dict[str, Any]:
        assert callback_timeout >= blobs.QUESTION_TIMEOUT_SEC  # every message to a worker has a deadline
        self.calls.append(function.__name__)
        return {workers[0]: function(*args)}


def test_a_file_is_sent_once_and_materialised_under_its_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETFARM_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "a.bin").write_bytes(b"runner")
    (tmp_path / "b.pte").write_bytes(b"model")
    refs, by_hash = blobs.refs_for({"runner/bin/x": tmp_path / "a.bin", "model/m/b.pte": tmp_path / "b.pte"})
    client = FakeClient()
    first = blobs.ship(client, "w", by_hash)
    assert (first.sent, first.skipped, first.bytes_sent) == (2, 0, 11)
    client.calls.clear()
    second = blobs.ship(client, "w", by_hash)
    assert (second.sent, second.skipped) == (0, 2)
    assert client.calls == ["missing"]
    paths = blobs.materialize(refs, tmp_path / "task")
    assert paths["runner/bin/x"].read_bytes() == b"runner"
    assert paths["model/m/b.pte"] == tmp_path / "task" / "model" / "m" / "b.pte"


def test_content_that_does_not_match_its_hash_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETFARM_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ValueError, match="does not match"):
        blobs.put(hashlib.sha256(b"good").hexdigest(), b"evil")
    assert blobs.missing([hashlib.sha256(b"good").hexdigest()])
