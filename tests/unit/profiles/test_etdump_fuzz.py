"""Damaged ETDumps: random bytes, truncations, single-byte mutations -> AnalysisError or a result.

Never IndexError/struct.error/ValueError, never a hang. Synthetic dumps run always (fast);
the real runtime's ETDump runs in the slow test.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.etdump import parse_etdump
from orchestrator.profiles.etdump_events import durations_ms, group_blocks
from tests.helpers.etdumps import Debug, Profile, Run, build_etdump, typical_runs

SEED = build_etdump(
    typical_runs(iterations=3, layers=2)
    + [Run("Execute", [Debug(instr=0, output=True), Profile(dd_str="k #1", instr=0, start=5, end=9, metadata=b"m")], allocators=["a"])]
)
FUZZ = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
# CPU seconds of this process, not wall time: a loaded host (the suite runs 4 workers on 2 cores) stretches the
# wall clock, not the work. A reader that loops or inflates a length field still blows this by orders of magnitude.
MAX_CPU_SECONDS_PER_FILE = 2.0


def read_all(data: bytes) -> int:
    """The whole reading pipeline, errors and all; returns the number of timed events read."""
    dump = parse_etdump(data, "fuzz.etdp")
    return sum(durations_ms(dump, group).size for group in group_blocks(dump))


def analyze_bytes(data: bytes) -> None:
    """The whole reading pipeline; only AnalysisError may escape, and it must be quick."""
    began = time.process_time()
    try:
        read_all(data)
    except AnalysisError as exc:
        assert str(exc).startswith("fuzz.etdp: ") and "\n" not in str(exc)
    assert time.process_time() - began < MAX_CPU_SECONDS_PER_FILE


def test_the_seed_itself_reads() -> None:
    # Without this the fuzz tests would also pass on a reader that rejects everything.
    assert read_all(SEED) > 0


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes(data: bytes) -> None:
    analyze_bytes(data)


@FUZZ
@given(st.binary(min_size=4, max_size=2048), st.booleans())
def test_random_bytes_with_a_valid_header(body: bytes, prefixed: bool) -> None:
    header = len(body).to_bytes(4, "little") + body[:4] + b"ED00" if prefixed else body[:4] + b"ED00"
    analyze_bytes(header + body[4:])


@FUZZ
@given(st.integers(min_value=0, max_value=len(SEED)))
def test_truncations(length: int) -> None:
    analyze_bytes(SEED[:length])


@FUZZ
@given(st.integers(min_value=0, max_value=len(SEED) - 1), st.integers(min_value=0, max_value=255))
def test_single_byte_mutations(position: int, value: int) -> None:
    data = bytearray(SEED)
    data[position] = value
    analyze_bytes(bytes(data))


@pytest.mark.slow
def test_mutations_of_a_real_etdump() -> None:
    from tests.helpers.etdumps import XNNPACK, real_etdump

    real = real_etdump(XNNPACK, iterations=3).read_bytes()
    assert read_all(real) > 0  # sanity: the pristine file reads (an AnalysisError here fails the test)

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(min_value=0, max_value=len(real) - 1), st.integers(min_value=0, max_value=255), st.integers(0, len(real)))
    def mutate(position: int, value: int, cut: int) -> None:
        data = bytearray(real)
        data[position] = value
        analyze_bytes(bytes(data))
        analyze_bytes(real[:cut])

    mutate()
