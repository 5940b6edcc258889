"""Verdict, night and bisect records go through the one codec (base/codec.py) and write what etfarm wrote before
they did: the JSON of each sample record equals, key order and NaN included, the fixture the hand-written
`to_dict`s produced (tests/helpers/codec_samples.py); records etfarm reads back decode to equal objects."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.base.codec import FieldError, decode, encode
from tests.helpers.codec_samples import FIXTURE, samples, written

BEFORE = json.loads(FIXTURE.read_text(encoding="utf-8"))
NOW = samples()


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_each_record_writes_the_json_it_wrote_before_the_codec(name: str) -> None:
    # text, not dicts: key order is what `compare --json` and `history --json changes` print, NaN must stay NaN
    assert json.dumps(written({name: NOW[name]})[name]) == json.dumps(BEFORE[name])


@pytest.mark.parametrize("name", ["Estimate", "Load", "SideFigures", "Confirmation", "BelowThreshold", "MemoryVerdict",
                                  "LeftOutNight", "ChangePoint", "SeriesChanges", "SeriesStep", "IncompleteSide",
                                  "SeriesKey", "VerdictSettings", "BisectStep", "SettingDifference", "WorkerRow",
                                  "ContentionSummary", "NightBisect", "RecipeInfo", "LlmReference"])
def test_records_read_back_equal_from_the_files_written_before(name: str) -> None:
    for obj, before in zip(NOW[name], BEFORE[name], strict=True):
        back = decode(type(obj), before)
        assert _same(back, obj), (name, back, obj)
        assert _same(decode(type(obj), encode(obj)), obj)


def test_a_renamed_key_is_read_by_its_json_name_and_a_wrong_one_is_named() -> None:
    from orchestrator.verdicts.memory import MemoryVerdict

    data = encode(MemoryVerdict(1000, 1500, 0.1, True, "grew"))
    assert "peak_a" not in data and data["peak_rss_bytes_b"] == 1500 and data["ratio"] == 1.5
    with pytest.raises(FieldError, match="peak_rss_bytes_a: expected a whole number"):
        decode(MemoryVerdict, {**data, "peak_rss_bytes_a": "lots"})


def test_an_op_verdict_writes_its_estimate_flat_and_an_unknown_detectable_change_as_null() -> None:
    ops = NOW["OpVerdict"]
    assert "estimate" not in BEFORE["OpVerdict"][0] and BEFORE["OpVerdict"][1]["detectable"] is None
    for op, before in zip(ops, BEFORE["OpVerdict"], strict=True):
        assert _same(decode(type(op), before), op)
    unknown = replace(ops[0], detectable=math.nan, blind="too noisy")
    data = encode(unknown)
    assert data["detectable"] is None and data["could_not_judge"] == "too noisy" and data["ratio"] == ops[0].estimate.ratio
    back = decode(type(unknown), data)
    assert math.isnan(back.detectable) and back.estimate == unknown.estimate and back.blind == "too noisy"


def _same(a: object, b: object) -> bool:
    """Equal, NaN equal to NaN (an estimate with nothing to divide by)."""
    return json.dumps(encode(a), default=str) == json.dumps(encode(b), default=str) and (
        a == b or any(isinstance(v, float) and math.isnan(v) for v in encode(a).values()))


def test_a_skipped_field_is_not_written_and_a_derived_view_is_encoded(tmp_path: Path) -> None:
    from orchestrator.verdicts.pair_verdicts import PairVerdict

    full = NOW["PairVerdict"][0]
    linked = replace(full, dir_a=tmp_path / "a", dir_b=tmp_path / "b")
    data = encode(linked)
    assert data == encode(full) and "dir_a" not in data and "loads" not in data  # links are no part of the record
    # the contention and the figures are the pair's own fields, written in their JSON shape (dataclasses encoded)
    assert data["contention"] == {"a": encode(full.loads[0]), "b": None, "dropped_a": 1, "dropped_b": 0}
    assert data["figures"]["a"]["executions"] == 60 and data["figures"]["b"] is None
    # a series verdict held as `Any` (its class sits above the pair's) is encoded, its own pairs in short
    assert data["series"]["night"]["source_a"] == "run-1+run-2" and data["series"]["left_out"][0]["run_id"] == "run-7"
    assert data["metrics"][1]["p_value"] != data["metrics"][1]["p_value"]  # a dotted derived figure, NaN as computed
    missing = replace(NOW["PairVerdict"][2], dir_a=tmp_path)  # a pair with no metric: its record reads back
    back = decode(PairVerdict, encode(missing))
    assert back.dir_a is None and _same(back, replace(missing, dir_a=None))  # a skipped field reads as its default


def test_bisect_json_reads_back_as_the_document_written() -> None:
    from orchestrator.app.bisect_output import BisectDocument

    for result, before in zip(NOW["BisectResult"], BEFORE["BisectResult"], strict=True):
        assert decode(BisectDocument, before) == result.document()


def test_a_strict_record_requires_its_lists_where_a_manifest_record_reads_them_empty() -> None:
    from orchestrator.artifacts.generation import GenerationFigures
    from orchestrator.verdicts.likeness import SeriesKey

    figures = GenerationFigures(20.0, 18.0, 400.0, 100.0, 150.0, (6.0,), 120.0, 2048, -1, 4096, -1, (1, 2))
    data = encode(figures)
    assert decode(GenerationFigures, data) == figures
    with pytest.raises(FieldError, match="^tokens: missing$"):  # the runner's line: a missing list is a broken runner
        decode(GenerationFigures, {k: v for k, v in data.items() if k != "tokens"})
    assert decode(SeriesKey, {"device": "d", "model": "m"}).settings == ()  # not strict: a missing list reads empty


def test_night_json_is_written_as_before_and_read_back_typed(tmp_path: Path) -> None:
    from orchestrator.results.night_marks import read_night, record_night

    # the night's Confirmations and NightBisects are passed as they are: the codec writes them (their classes sit above)
    record_night([tmp_path], "20260103-010000", Path("/nights/nightly-20260103-010000.html"),
                 {"regressed": 1, "unchanged": 3}, NOW["Confirmation"], NOW["NightBisect"], "a" * 40)
    assert (tmp_path / "night.json").read_text() == (FIXTURE.parent / "night_before_codec.json").read_text()
    night = read_night(tmp_path)
    assert night is not None and night.night_id == "20260103-010000" and night.repo_head == "a" * 40
    assert night.confirmed("run-1", "pixel8", "mlp") is True and night.culprit("run-1", "pixel8", "mlp") == "c" * 40
    assert night.verdicts == {"regressed": 1, "unchanged": 3}


def test_a_night_json_entry_of_the_wrong_kind_is_left_out_and_a_wrong_file_reads_as_no_night(tmp_path: Path) -> None:
    from orchestrator.results.night_marks import read_night

    path = tmp_path / "night.json"
    path.write_text(json.dumps({"night": "n1", "page": "", "verdicts": {"regressed": "x", "unchanged": 2},
                                "confirmations": ["junk", {"first_run": "r"}], "bisects": [3]}))
    night = read_night(tmp_path)
    assert night is not None and night.page is None and night.verdicts == {"unchanged": 2}
    assert night.confirmations == ({"first_run": "r"},) and night.bisects == ()
    for bad in ({"night": "../x"}, {"page": "p"}, {"night": "n1", "verdicts": "many"}):
        path.write_text(json.dumps(bad))
        assert read_night(tmp_path) is None, bad
