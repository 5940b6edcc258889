from dataclasses import replace

from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.terminal.summary import format_table, summary, wall_clock_lines
from orchestrator.results.model import (
    DeviceResult,
    DeviceStatus,
    Job,
    JobConfig,
    JobStatus,
    ModelResult,
    ModelStatus,
    ProcessRun,
)


def stat_rows() -> list[StatRow]:
    rows = []
    for device, scale in (("pixel8", 1.0), ("rpi5", 3.0)):
        for index, (name, avg) in enumerate([("Method::execute", 10.0), ("conv #1", 6.0), ("OPERATOR_CALL", 1.0), ("add #1", 2.0)]):
            if device == "rpi5" and name == "add #1":
                continue  # the slower board lacks this event: its cell shows "-"
            rows.append(StatRow(device=device, model="m", event_block="Execute", event_index=index, event_name=name,
                                samples=4, p50_ms=avg * scale, p90_ms=avg * scale * 1.1, avg_ms=avg * scale, cv=0.05))
    return rows


def test_summary_puts_devices_side_by_side() -> None:
    text = summary(stat_rows())
    assert "model m: p50 per device (pixel8, rpi5)" in text
    lines = {line.split()[0] + " " + line.split()[1]: line.split() for line in text.splitlines()[3:]}
    assert lines["Method::execute Execute"][-2:] == ["10.00", "30.00"]  # 2 decimals from 10 ms
    assert lines["conv #1"][-2:] == ["6.0000", "18.00"]
    assert lines["add #1"][-2:] == ["2.0000", "-"]
    assert not any("OPERATOR_CALL" in line for line in text.splitlines())  # framework bookkeeping stays out


def test_summary_columns_of_kernel_times_are_in_microseconds() -> None:
    """XNNPACK kernels take microseconds: a column whose every time is under 1 ms says us, never `0.0000` ms."""
    tiny = [replace(r, p50_ms=r.p50_ms / 100, p90_ms=r.p90_ms / 100, avg_ms=r.avg_ms / 100) for r in stat_rows()]
    for text in (summary(tiny), summary([r for r in tiny if r.device == "pixel8"])):
        header = text.splitlines()[1].split()
        assert "ms" not in header and "0.0000" not in text, text
    one = summary([r for r in tiny if r.device == "pixel8"]).splitlines()
    assert one[1].split()[3:6] == ["p50", "us", "p90"]
    assert one[3].split()[3:6] == ["100.0", "110.0", "100.0"]  # Method::execute: 0.1 ms
    both = summary(tiny).splitlines()
    assert both[1].split()[2:] == ["pixel8", "us", "rpi5", "us"]
    assert both[3].split()[-2:] == ["100.0", "300.0"]
    # A column with a time from 1 ms stays in ms, the others of the table keep their own unit.
    mixed = [replace(r, p50_ms=5.0) if r.event_name == "Method::execute" else r for r in tiny if r.device == "pixel8"]
    assert summary(mixed).splitlines()[1].split()[3:8] == ["p50", "ms", "p90", "us", "avg"]


def test_summary_single_device_orders_by_avg_after_the_total() -> None:
    text = summary([r for r in stat_rows() if r.device == "pixel8"])
    names = [line.split()[0] for line in text.splitlines()[3:]]
    assert names == ["Method::execute", "conv", "add"]
    assert "5.0" in text.splitlines()[3]  # cv shown in percent


def test_wall_clock_lines_report_overhead_and_instability() -> None:
    runs = (ProcessRun("run-1", True, (1.0, 1.0, 1.2, 1.2), load_ms=3.0), ProcessRun("e2e-1", False, (1.0,)))
    model = ModelResult("m", ModelStatus.OK, runs)
    job = Job("id", JobStatus.OK, "now", JobConfig(("d",), ("m.py",), "xnnpack"),
              devices=(DeviceResult("d", "local", "host", DeviceStatus.OK, models=(model,)),))
    (line,) = wall_clock_lines(job)
    # median 1.1 against 1.0 untraced; IQR / median of (1.0, 1.0, 1.2, 1.2) is (1.2 - 1.0) / 1.1 = 18 %... with linear
    # quartiles (1.0, 1.2): 0.2 / 1.1
    assert "tracer overhead +10.0%" in line and "method load p50 3.0000 ms" in line
    assert "UNSTABLE: a process run's executions spread 18% (IQR / median; limit 20%)" not in line  # 18 % < 20 %
    wide = ModelResult("m", ModelStatus.OK, (ProcessRun("run-1", True, (1.0, 1.0, 1.5, 1.5)),))
    (shaky,) = wall_clock_lines(job.with_device(DeviceResult("d", "local", "host", DeviceStatus.OK, models=(wide,))))
    assert "UNSTABLE: a process run's executions spread 40% (IQR / median; limit 20%)" in shaky
    stable = ModelResult("m", ModelStatus.OK, (ProcessRun("run-1", True, (1.0, 1.01)),))
    (calm,) = wall_clock_lines(job.with_device(DeviceResult("d", "local", "host", DeviceStatus.OK, models=(stable,))))
    assert "UNSTABLE" not in calm and "tracer overhead" not in calm


def test_format_table_aligns_columns() -> None:
    text = format_table(["a", "bb"], [["x", 1.5], ["longer", None]], "lr")
    assert text.splitlines() == ["a           bb", "------  ------", "x       1.5000", "longer       -"]


def test_every_public_name_of_a_subpackage_resolves_to_what_it_names() -> None:
    import importlib
    import types

    for package in ("artifacts", "profiles", "run", "report"):
        module = importlib.import_module(f"orchestrator.{package}")
        for name in module.__all__:
            value = getattr(module, name)
            assert not isinstance(value, types.ModuleType), f"orchestrator.{package}.{name} is a module, not its API"


def test_wall_clock_lines_show_memory_cold_load_and_flags() -> None:
    from orchestrator.results.model import RunFlag

    runs = (ProcessRun("run-1", True, (1.0,), load_ms=9.0, cold=True, peak_rss_kb=7 * 1024, planned_memory_bytes=1536,
                       program_bytes=3 << 20),
            ProcessRun("run-2", True, (1.0,), load_ms=2.0, peak_rss_kb=8 * 1024, flag=RunFlag.INTERFERED, slowdown=0.93),
            ProcessRun("run-3", True, (1.0,), load_ms=4.0))
    job = Job("id", JobStatus.OK, "now", JobConfig(("d",), ("m.py",), "xnnpack"),
              devices=(DeviceResult("d", "local", "host", DeviceStatus.OK, models=(ModelResult("m", ModelStatus.OK, runs),)),))
    (line,) = wall_clock_lines(job)
    assert "method load p50 3.0000 ms (cold 9.0000 ms)" in line  # warm runs only in the distribution
    assert "peak RSS 8.0 MiB, planned 1.5 KiB, program 3.0 MiB" in line
    assert "FLAGGED: run-2 interfered (calibration +93%)" in line
