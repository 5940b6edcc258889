"""Every number read from YAML, JSON or a manifest is range-checked where it is parsed, and every id read from a file
matches the id grammar before it names a file or reaches a page (issue 35, items 2 and 5): real files, one line,
exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.base.errors import ConfigError, DataError
from orchestrator.base.ids import checked_id, is_id
from orchestrator.base.yamlfile import load_yaml
from orchestrator.cli import main
from orchestrator.results.model import load_manifest
from orchestrator.results.night_marks import read_marks

HUGE = "9" * 5000  # past Python's 4300-digit limit for int(str): the parser itself raised ValueError


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "internal error" not in err[0] and "Traceback" not in err[0]
    return err[0]


def test_a_5000_digit_count_in_a_plan_is_one_line_naming_the_file_and_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"devices: [local]\nmodels: [m.py:build]\nreport: r\nruns: {HUGE}\n")
    assert main(["nightly", "--plan", str(plan), "--store", str(tmp_path / "s.db")]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"error: {plan}: line 4: number 99999") and "5000 characters long" in line
    assert not (tmp_path / "r").exists() and not (tmp_path / "s.db").exists()


def test_a_5000_digit_port_in_an_inventory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inventory = tmp_path / "devices.yaml"
    inventory.write_text(f"devices:\n  b:\n    transport: ssh\n    host: 127.0.0.1\n    port: {HUGE}\n    user: u\n"
                         "    target: host\n")
    assert main(["devices", "--config", str(inventory), "--no-check"]) == 2
    assert one_error_line(capsys).startswith(f"error: {inventory}: line 5: number")


def test_a_long_float_is_refused_and_short_numbers_parse(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(f"a: 1.{'5' * 60}\n")
    with pytest.raises(ConfigError, match="line 1: number"):
        load_yaml(path)
    path.write_text("a: 22\nb: 2.5\nc: 0x10\nd: 1.0e+3\n")
    assert load_yaml(path) == {"a": 22, "b": 2.5, "c": 16, "d": 1000.0}


def _manifest(tmp_path: Path, run: Path) -> Path:
    run.mkdir(parents=True, exist_ok=True)
    (run / "manifest.json").write_text((Path(__file__).parent / "run" / "manifest_golden.json").read_text())
    return run / "manifest.json"


@pytest.mark.parametrize("run_id", ['<a href="https://evil.example/">x</a><b>y</b>', "../../etc", "a\nb", ".hidden",
                                    "x" * 200])
def test_a_manifests_run_id_that_is_no_id_is_refused_in_one_line(tmp_path: Path, run_id: str) -> None:
    path = _manifest(tmp_path, tmp_path / "run")
    data = json.loads(path.read_text())
    data["run_id"] = run_id
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=r"run_id: .* is not an id") as err:
        load_manifest(path)
    assert "\n" not in str(err.value)


def test_a_manifests_device_name_that_is_no_id_is_refused(tmp_path: Path) -> None:
    path = _manifest(tmp_path, tmp_path / "run")
    data = json.loads(path.read_text())
    data["devices"] = {"../up": data["devices"]["d"]}
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match="devices: '../up' is not a"):
        load_manifest(path)


def test_a_whole_number_past_64_bits_in_a_manifest_is_out_of_range(tmp_path: Path) -> None:
    path = _manifest(tmp_path, tmp_path / "run")
    data = json.loads(path.read_text())
    data["config"]["runs"] = 10 ** 30
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match="out of range"):
        load_manifest(path)
    path.write_text(path.read_text().replace(str(10 ** 30), HUGE))  # past Python's own limit: the JSON reader says so
    with pytest.raises(DataError, match="cannot read manifest"):
        load_manifest(path)


def test_the_id_grammar() -> None:
    assert all(is_id(v) for v in ("20261127-153000-ab12", "adb:127.0.0.1:5555", "tiny_cnn-int8-static", "n00001.x"))
    assert not any(is_id(v) for v in ("", ".x", "-x", "a/b", "a b", "<b>", "a\nb", "x" * 129, 5, None))
    with pytest.raises(DataError, match=r"^f: key: '<b>' is not an id"):
        checked_id("<b>", "f: key")


def test_a_night_json_whose_night_is_no_id_gives_no_night(tmp_path: Path) -> None:
    (tmp_path / "night.json").write_text(json.dumps({"night": "../../x", "page": "/tmp/p.html", "verdicts": {}}))
    assert read_marks(tmp_path)[1] is None
    (tmp_path / "night.json").write_text(json.dumps({"night": "n1", "page": "/tmp/p.html", "verdicts": {}}))
    night = read_marks(tmp_path)[1]
    assert night is not None and night.night_id == "n1"
