"""The host's reference run: the runtime's own error line (written on file descriptor 2 by C++) becomes the
configuration's reason; on success what it wrote is given back to stderr."""

from __future__ import annotations

import os

import pytest

from orchestrator.artifacts.host_reference import run_on_host, runtime_reason
from orchestrator.base.errors import ExportError

# What ExecuTorch 1.5.1's runtime wrote running MobileNetV2's int8-dynamic program (issue 41), as recorded.
RECORDED = ("E 00:00:12.345678 executorch:XNNExecutor.cpp:169] Internal Error: Propagating input shapes failed with "
            "code: xnn_status_invalid_parameter\n"
            "E 00:00:12.345700 executorch:method.cpp:1290] CALL_DELEGATE execute failed at instruction 0: 0x1\n")


def test_the_first_error_line_without_the_log_prefix() -> None:
    assert runtime_reason(RECORDED) == ("XNNExecutor.cpp:169] Internal Error: Propagating input shapes failed with code: "
                                        "xnn_status_invalid_parameter")
    assert runtime_reason("[XNNExecutor.cpp:169] Internal Error: bad\n") == "[XNNExecutor.cpp:169] Internal Error: bad"
    assert runtime_reason("I 00:00:00.1 executorch: loaded\n") == ""


def test_a_failing_run_names_the_runtimes_line_and_its_exception(capfd: pytest.CaptureFixture[str]) -> None:
    def fails() -> None:
        os.write(2, RECORDED.encode())  # as the C++ runtime does: below Python's sys.stderr
        raise RuntimeError("method->execute() failed with error 0x1")

    with pytest.raises(ExportError) as caught:
        run_on_host(fails, "'m.py:build' with recipe int8-dynamic")
    assert str(caught.value) == ("the host's reference run of 'm.py:build' with recipe int8-dynamic failed: "
                                 "XNNExecutor.cpp:169] Internal Error: Propagating input shapes failed with code: "
                                 "xnn_status_invalid_parameter (method->execute() failed with error 0x1)")
    assert "Propagating" not in capfd.readouterr().err  # in the reason, not printed again as noise


def test_a_run_that_succeeds_returns_and_gives_stderr_back(capfd: pytest.CaptureFixture[str]) -> None:
    def works() -> list[int]:
        os.write(2, b"I 00:00:00.1 executorch: a note\n")
        return [1, 2]

    assert run_on_host(works, "x") == [1, 2]
    assert "a note" in capfd.readouterr().err


def test_a_runtime_that_says_nothing_still_gives_the_exceptions_words() -> None:
    def silent() -> None:
        raise RuntimeError("")

    with pytest.raises(ExportError, match=r"failed: RuntimeError$"):
        run_on_host(silent, "x")
