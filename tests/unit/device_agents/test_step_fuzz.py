"""A device that sends garbage: any corruption of a step's stream is a DeviceError, never a crash or a hang."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from device_agents.step import parse_frames
from orchestrator.base.errors import DeviceError
from tests.unit.device_agents.test_step import GOOD, NONCE


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_mutated_streams_parse_or_fail_typed(data: st.DataObject) -> None:
    stream = bytearray(GOOD)
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        pos = data.draw(st.integers(0, max(0, len(stream) - 1)))
        if action == "flip" and stream:
            stream[pos] ^= data.draw(st.integers(1, 255))
        elif action == "cut":
            del stream[pos:pos + data.draw(st.integers(1, 40))]
        else:
            stream[pos:pos] = data.draw(st.binary(min_size=1, max_size=40))
    started = time.process_time()  # CPU of this process: a loaded host stretches wall time, not the work
    try:
        parse_frames(bytes(stream), NONCE, "dev")
    except DeviceError:
        pass
    assert time.process_time() - started < 2.0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=4096))
def test_random_bytes_are_device_errors(junk: bytes) -> None:
    try:
        parse_frames(junk, NONCE, "dev")
    except DeviceError:
        return
    raise AssertionError("random bytes parsed as a step stream")
