import os
from pathlib import Path

import pytest

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.file_memo import FileMemo, file_key


def test_a_file_is_read_once_until_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "a.bin"
    path.write_bytes(b"one")
    memo: FileMemo[bytes] = FileMemo()
    reads: list[bytes] = []

    def read() -> bytes:
        reads.append(path.read_bytes())
        return reads[-1]

    assert memo.get([file_key(path)], read) == b"one" and memo.get([file_key(path)], read) == b"one"
    assert len(reads) == 1
    path.write_bytes(b"three")  # rewritten in place: another size and mtime
    os.utime(path, ns=(1, 1))
    assert memo.get([file_key(path)], read) == b"three" and len(reads) == 2
    memo.clear()
    assert memo.get([file_key(path)], read) == b"three" and len(reads) == 3


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(AnalysisError, match=r"gone\.etrecord: no such ETRecord file"):
        file_key(tmp_path / "gone.etrecord", "ETRecord file")
