"""orchestrator.profiles.etdump: the columnar reader, on synthetic ETDumps built per the schema."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # `tests.helpers` under any import mode

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles import etdump_flatbuffer as flatbuffer
from orchestrator.profiles.etdump import (
    KIND_ALLOCATION,
    KIND_DEBUG,
    KIND_PROFILE,
    parse_etdump,
    read_etdump,
)
from tests.helpers.etdumps import (
    Allocation,
    Debug,
    Profile,
    Run,
    build_etdump,
    typical_runs,
)


def test_reads_blocks_and_profile_fields() -> None:
    data = build_etdump(
        [
            Run("Default", [Profile("Method::init", chain=-1, instr=0, start=5, end=9)], bundled_input_index=3),
            Run("Execute", [Profile("op", chain=2, instr=7, dd_int=4, dd_str="k#1", start=2**40, end=2**40 + 77, metadata=b"\x01\x02")]),
        ],
        version=9,
    )
    dump = parse_etdump(data, "x.etdp")
    assert dump.version == 9
    assert dump.num_blocks == 2
    assert [dump.string(c) for c in dump.block_name] == ["Default", "Execute"]
    assert dump.block_bundled_input_index.tolist() == [3, -1]
    assert dump.block_event_start.tolist() == [0, 1, 2]
    ev = dump.events
    assert ev.kind.tolist() == [KIND_PROFILE, KIND_PROFILE]
    assert [dump.string(c) for c in ev.name] == ["Method::init", "op"]
    assert ev.chain_index.tolist() == [-1, 2]
    assert ev.instruction_id.tolist() == [0, 7]
    assert ev.delegate_id_int.tolist() == [-1, 4]
    assert [dump.string(c) for c in ev.delegate_id_str] == [None, "k#1"]
    assert ev.start_time.tolist() == [5, 2**40]
    assert ev.end_time.tolist() == [9, 2**40 + 77]
    assert dump.delegate_debug_metadata(0) == b""
    assert dump.delegate_debug_metadata(1) == b"\x01\x02"


def test_defaults_when_fields_are_absent() -> None:
    dump = parse_etdump(build_etdump([Run(None, [Profile()])]))
    ev = dump.events
    assert dump.string(int(dump.block_name[0])) is None
    assert (ev.name[0], ev.chain_index[0], ev.instruction_id[0], ev.delegate_id_int[0], ev.delegate_id_str[0]) == (-1, 0, -1, -1, -1)


def test_debug_and_allocation_events_and_allocators() -> None:
    runs = [
        Run(
            "Execute",
            [Debug("d", instr=1, dd_str="", output=True), Debug(instr=2), Allocation(1, 4096), Profile("p")],
            allocators=["planned", "temp"],
        ),
        Run("Empty", []),
        Run("NoEvents", None),
    ]
    dump = parse_etdump(build_etdump(runs))
    ev = dump.events
    assert ev.kind.tolist() == [KIND_DEBUG, KIND_DEBUG, KIND_ALLOCATION, KIND_PROFILE]
    assert ev.debug_is_output.tolist() == [True, False, False, False]
    assert ev.debug_value_type.tolist()[:2] == [1, 1]  # ValueType.Int
    assert ev.instruction_id.tolist()[:2] == [1, 2]
    assert [dump.string(c) for c in ev.delegate_id_str] == ["", None, None, None]  # "" is not absent
    assert ev.allocator_id[2] == 1 and ev.allocation_size[2] == 4096
    assert dump.block_allocators == (("planned", "temp"), (), ())
    assert dump.block_has_events.tolist() == [True, True, False]
    assert dump.block_event_start.tolist() == [0, 4, 4, 4]


def test_equal_strings_share_a_code() -> None:
    dump = parse_etdump(build_etdump(typical_runs(iterations=4)))
    names = [dump.strings[c] for c in dump.events.name]
    assert len(set(dump.events.name.tolist())) == len(set(names))
    assert names.count("OPERATOR_CALL") == 8


def test_accepts_unprefixed_buffers() -> None:
    prefixed = parse_etdump(build_etdump(typical_runs()))
    plain = parse_etdump(build_etdump(typical_runs(), size_prefixed=False))
    assert plain.events.start_time.tolist() == prefixed.events.start_time.tolist()


def test_long_and_unicode_strings() -> None:
    long_name = "x" * 5000 + "é"
    dump = parse_etdump(build_etdump([Run("Exécute", [Profile(long_name), Profile("a"), Profile(long_name)])]))
    assert [dump.string(c) for c in dump.events.name] == [long_name, "a", long_name]
    assert dump.string(int(dump.block_name[0])) == "Exécute"


def test_read_from_path(tmp_path: Path) -> None:
    path = tmp_path / "run.etdp"
    path.write_bytes(build_etdump(typical_runs()))
    dump = read_etdump(path)
    assert dump.path == str(path)
    assert len(dump.events) == 2 + 3 * 5


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),
        (b"\x00" * 6, "too short"),
        (b"\x10\x00\x00\x00XXXX" + b"\x00" * 16, "not an ETDump"),
        (b"PK\x03\x04" + b"\x00" * 40, "not an ETDump"),
    ],
)
def test_rejects_non_etdumps(data: bytes, message: str) -> None:
    with pytest.raises(AnalysisError, match=message) as info:
        parse_etdump(data, "bad.etdp")
    assert str(info.value).startswith("bad.etdp: ")
    assert "\n" not in str(info.value)


def test_truncated_file_names_the_problem() -> None:
    data = build_etdump(typical_runs())
    with pytest.raises(AnalysisError, match=r"bad\.etdp: truncated ETDump"):
        parse_etdump(data[: len(data) // 2], "bad.etdp")


def test_missing_path_and_directory(tmp_path: Path) -> None:
    with pytest.raises(AnalysisError, match="no such file"):
        read_etdump(tmp_path / "nope.etdp")
    with pytest.raises(AnalysisError, match="is a directory"):
        read_etdump(tmp_path)


def test_offsets_pointing_outside_the_file_are_reported() -> None:
    data = bytearray(build_etdump(typical_runs()))
    # Root offset (after the size prefix) pointing far beyond the end.
    data[4:8] = (len(data) * 4).to_bytes(4, "little")
    with pytest.raises(AnalysisError, match="outside the file"):
        parse_etdump(bytes(data), "bad.etdp")


def test_huge_vector_lengths_are_rejected_without_allocating() -> None:
    original = build_etdump([Run("Execute", [Profile("a")])])
    messages = set()
    for pos in range(4, len(original) - 4, 4):  # every aligned u32 that could be a length of 1
        if original[pos : pos + 4] != (1).to_bytes(4, "little"):
            continue
        data = bytearray(original)
        data[pos : pos + 4] = (2**31).to_bytes(4, "little")
        try:
            parse_etdump(bytes(data), "bad.etdp")
        except AnalysisError as exc:
            messages.add(str(exc))
    assert any("past the end" in m for m in messages)


def test_columns_are_numpy_arrays() -> None:
    dump = parse_etdump(build_etdump(typical_runs(iterations=50)))
    for name in ("kind", "name", "instruction_id", "start_time", "end_time"):
        column = getattr(dump.events, name)
        assert isinstance(column, np.ndarray) and column.shape == (len(dump.events),)


def test_aliased_strings_are_decoded_once_however_often_they_are_referenced(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2,000 events all naming one 300 kB string: per reference that was 600 MB of decoding.
    huge = "x" * 300_000
    data = build_etdump([Run("Execute", [Profile(huge, start=i, end=i + 1) for i in range(2000)])], shared_strings=True)
    assert len(data) < 2 * len(huge)  # the name really is stored once
    decoded: list[int] = []
    original = flatbuffer.StringTable._decode

    def counting(buf: object, pos: int, length: int) -> str:
        decoded.append(length)
        return original(buf, pos, length)

    monkeypatch.setattr(flatbuffer.StringTable, "_decode", staticmethod(counting))
    dump = parse_etdump(data, "aliased.etdp")
    assert len(dump.events) == 2000 and dump.string(int(dump.events.name[0])) == huge
    assert sum(decoded) <= len(data)  # linear in the file, not in the references


def test_overlapping_strings_are_refused_as_corrupt() -> None:
    table = flatbuffer.StringTable()
    # Two "strings" whose bytes overlap: at 0 a length of 8 covering the one at 4.
    buf = flatbuffer.Buffer(b"\x08\x00\x00\x00\x02\x00\x00\x00abcdefgh")
    with pytest.raises(flatbuffer.Corrupt, match="overlap"):
        table.intern(buf, np.array([0, 4, 0]), "event name")
    assert table.intern(buf, np.array([4, -1, 4]), "event name").tolist() == [0, -1, 0]


def test_a_long_shared_name_is_decoded_not_widened_into_the_string_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every event naming one 300 kB string: a matrix as wide as the longest name cost a numpy step per
    # 8 bytes of it (2.5 s for a 2 MB ETDump); long names are decoded as they are, short ones hashed.
    huge = "y" * 300_000
    events = [Profile(huge if i % 2 else f"op{i % 6}", start=i, end=i + 1) for i in range(400)]
    data = build_etdump([Run("Execute", events)], shared_strings=True)
    widths: list[int] = []
    original = flatbuffer._string_words

    def recording(buf: object, starts: np.ndarray, lengths: np.ndarray, nwords: int) -> np.ndarray:
        widths.append(nwords)
        return original(buf, starts, lengths, nwords)

    monkeypatch.setattr(flatbuffer, "_string_words", recording)
    dump = parse_etdump(data, "wide.etdp")
    names = [dump.string(int(code)) for code in dump.events.name]
    assert names == [huge if i % 2 else f"op{i % 6}" for i in range(400)]
    assert widths and max(widths) * 8 <= flatbuffer._WIDE_STRING_BYTES
