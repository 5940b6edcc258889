"""cache.write_bytes_atomic: the one atomic writer (temp sibling, fsync, rename)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.base import cache
from orchestrator.base.cache import write_bytes_atomic, write_json_atomic, write_text_atomic


def test_replaces_the_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "stats.csv"
    write_text_atomic(target, "old\n")
    write_bytes_atomic(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert os.stat(target).st_mode & 0o777 == 0o644
    write_json_atomic(target, {"b": 1, "a": [1.5]})
    assert target.read_text() == '{\n  "a": [\n    1.5\n  ],\n  "b": 1\n}\n'
    assert sorted(p.name for p in target.parent.iterdir()) == ["stats.csv"]


def test_secret_files_keep_a_private_mode(tmp_path: Path) -> None:
    target = write_text_atomic(tmp_path / "known_hosts", "h ssh-ed25519 AAAA\n", mode=0o600)
    assert os.stat(target).st_mode & 0o777 == 0o600


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "manifest.json"
    write_text_atomic(target, "old")
    synced: list[int] = []

    def failing_fsync(fd: int) -> None:
        synced.append(fd)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="No space left"):
        write_text_atomic(target, "new")
    assert synced, "the data must be fsynced before the rename"
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_publish_dir_fsyncs_every_file_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    staging = tmp_path / ".tmp-entry"
    (staging / "sub").mkdir(parents=True)
    (staging / "model.pte").write_bytes(b"pte")
    (staging / "sub" / "meta.json").write_text("{}")
    synced: list[str] = []
    real_fsync, real_rename = os.fsync, os.rename

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def rename(src: object, dst: object) -> None:
        synced.append("RENAME")
        real_rename(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "rename", rename)
    cache.publish_dir(staging, tmp_path / "entry")
    before = synced[:synced.index("RENAME")]
    assert {str(staging / "model.pte"), str(staging / "sub" / "meta.json"), str(staging / "sub"), str(staging)} <= set(before)
    assert synced[-1] == str(tmp_path)  # the rename itself made durable
    assert (tmp_path / "entry" / "sub" / "meta.json").read_text() == "{}"
