"""device_agents/adb: the smart-socket client (wire.py), the server's tracker and an adb device's presence
(track.py), against an in-process fake adb server on real sockets (the real one: test_farm_probes.py)."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from device_agents.adb.track import AdbListing, AdbTracker
from device_agents.adb.wire import ready_serials
from device_agents.presence import PresenceWatch
from tests.helpers.fake_adb import serve_once
from tests.helpers.waiting import eventually


def test_adb_device_list_keeps_only_devices_in_state_device() -> None:
    body = b"emu-1\tdevice\nusb-2\toffline\n127.0.0.1:5555\tdevice\n"
    port = serve_once(b"OKAY" + b"%04x" % len(body) + body)
    assert ready_serials(("127.0.0.1", port)) == {"emu-1", "127.0.0.1:5555"}


def test_adb_refusal_raises_with_the_servers_reason() -> None:
    reason = b"unknown host service"
    port = serve_once(b"FAIL" + b"%04x" % len(reason) + reason)
    with pytest.raises(OSError, match="unknown host service"):
        ready_serials(("127.0.0.1", port))


def test_a_tracker_holds_the_initial_list_and_each_list_the_server_pushes(adb_servers) -> None:  # type: ignore[no-untyped-def]
    server = adb_servers({"emu-1": "device", "usb-2": "offline"})
    changed = threading.Event()
    tracker = AdbTracker("127.0.0.1", server.port, on_change=changed.set)
    try:
        assert tracker.serials(wait_s=5) == {"emu-1"}
        assert server.requests == [b"host:track-devices"]
        assert changed.wait(5)
        changed.clear()
        server.push({"emu-1": "device", "usb-2": "device", "usb-3": "unauthorized"})
        assert changed.wait(5)
        assert tracker.serials() == {"emu-1", "usb-2"}
        changed.clear()
        server.push({"usb-2": "device"})
        assert changed.wait(5)
        assert tracker.serials() == {"usb-2"}
        assert len(server.requests) == 1  # one connection, held: nothing polled
    finally:
        tracker.stop()
    assert not tracker.alive


def test_a_server_gone_empties_the_set_and_the_tracker_reconnects_when_it_is_back(adb_servers) -> None:  # type: ignore[no-untyped-def]
    server = adb_servers({"emu-1": "device"})
    changed = threading.Event()
    tracker = AdbTracker("127.0.0.1", server.port, on_change=changed.set)
    try:
        assert tracker.serials(wait_s=5) == {"emu-1"}
        changed.clear()
        server.stop()
        assert changed.wait(5)
        assert tracker.serials() == set()
        time.sleep(1.0)  # refused a few times: backing off
        changed.clear()
        back = adb_servers({"emu-1": "device", "emu-2": "device"}, port=server.port)
        assert changed.wait(BACKOFF_BOUND_SEC)
        assert tracker.serials() == {"emu-1", "emu-2"}
        assert back.requests == [b"host:track-devices"]
    finally:
        tracker.stop()


BACKOFF_BOUND_SEC = 7.0  # the capped backoff (5 s) plus the connection


def test_no_server_and_a_stalled_server_answer_an_empty_set_within_the_timeout(adb_servers) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        nobody = int(free.getsockname()[1])
    stalled = adb_servers({"emu-1": "device"}, answer=False)
    for port in (nobody, stalled.port):
        tracker = AdbTracker("127.0.0.1", port, timeout_s=0.3)
        try:
            started = time.monotonic()
            assert tracker.serials(wait_s=5) == set()
            assert time.monotonic() - started < 4.0  # the 0.3 s timeout, not wait_s (5 s); room for a loaded host
        finally:
            tracker.stop()
        assert not tracker.alive


def test_refresh_corrects_a_change_the_server_did_not_push(adb_servers) -> None:  # type: ignore[no-untyped-def]
    server = adb_servers({"emu-1": "device", "emu-2": "device"})
    changed = threading.Event()
    tracker = AdbTracker("127.0.0.1", server.port, on_change=changed.set)
    try:
        assert tracker.serials(wait_s=5) == {"emu-1", "emu-2"}
        changed.clear()
        server.change_silently({"emu-1": "offline", "emu-2": "device"})
        time.sleep(0.2)
        assert tracker.serials() == {"emu-1", "emu-2"}  # not told
        assert tracker.refresh() == {"emu-2"}
        assert tracker.serials() == {"emu-2"} and changed.is_set()
        assert server.requests == [b"host:track-devices", b"host:devices"]
        server.stop()
        assert tracker.refresh() == set()
    finally:
        tracker.stop()


def test_a_refresh_never_overwrites_a_newer_pushed_list(adb_servers) -> None:  # type: ignore[no-untyped-def]
    server = adb_servers({"emu-1": "device"})
    tracker = AdbTracker("127.0.0.1", server.port)
    try:
        assert tracker.serials(wait_s=5) == {"emu-1"}
        server.release_answer.clear()
        refreshed: list[frozenset[str]] = []
        refreshing = threading.Thread(target=lambda: refreshed.append(tracker.refresh()))
        refreshing.start()
        assert eventually(lambda: server.requests[-1] == b"host:devices")  # its answer: the list of now
        server.push({"emu-1": "device", "emu-2": "device"})  # a newer list, pushed while it waits
        assert eventually(lambda: tracker.serials() == {"emu-1", "emu-2"})
        server.release_answer.set()
        refreshing.join(5)
        assert refreshed == [{"emu-1", "emu-2"}] and tracker.serials() == {"emu-1", "emu-2"}
    finally:
        tracker.stop()


def test_a_listing_without_a_watch_asks_the_server_once_and_with_one_reads_its_tracker(adb_servers) -> None:  # type: ignore[no-untyped-def]
    body = b"emu-1\tdevice\n"
    port = serve_once(b"OKAY" + b"%04x" % len(body) + body)
    assert AdbListing(("127.0.0.1", port), "emu-1").present() is True
    server = adb_servers({"emu-1": "device"})
    watch = PresenceWatch()
    try:
        assert AdbListing(("127.0.0.1", server.port), "emu-1").present(watch) is True
        assert server.requests == [b"host:track-devices"]
        assert AdbListing(("127.0.0.1", server.port), "x").present(watch) is False
        assert server.requests == [b"host:track-devices"]  # both read the one tracker
    finally:
        watch.close()
