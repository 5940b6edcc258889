"""`etfarm publish`: the dashboard site from a synthetic store recorded through the real store (tests/helpers/
synthetic_store.py); the site from real nights in headless Chromium: tests/integration/verdicts/test_dashboard.py."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from orchestrator.base.errors import UsageError
from orchestrator.cli import main
from orchestrator.report.dashboard.site import SITE_MANIFEST, publish
from orchestrator.store import open_store
from tests.helpers.synthetic_store import Nights, record_nights


def stored(tmp_path: Path, plan: Nights, first: int = 0) -> Path:
    db = tmp_path / "results.db"
    with open_store(db) as store:
        record_nights(store, tmp_path / "runs", plan, first)
    return db


def text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def series_pages(out: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in (out / "series").glob("*.html")}


THIRD_REGRESSED = Nights(3, devices=("pixel8", "rpi5"), models=("mlp", "cnn"), steps={("rpi5", "cnn", "xnnpack"): (2, 1.6)})


def test_the_regressed_series_is_first_and_its_page_marks_the_confirmed_regression(tmp_path: Path) -> None:
    db = stored(tmp_path, THIRD_REGRESSED)
    published = publish(tmp_path / "site", db)
    assert (published.series, published.runs) == (4, 4)  # 3 nights + the third's confirmation job
    index = (tmp_path / "site" / "index.html").read_text()
    rows = re.findall(r'<tr data-series="([^"]+)"[^>]*data-verdict="([^"]+)"', index)
    assert rows[0][0].startswith("cnn-rpi5-xnnpack") and rows[0][1] == "regressed"
    assert {verdict for _, verdict in rows[1:]} == {"unchanged"}
    page = text((tmp_path / "site" / "series" / f"{rows[0][0]}.html").read_text())
    night3 = "0002" + "0" * 8  # the third night's commit, as the page shortens it (12 characters)
    found = re.search(r"Regressions (.*?) Change points", page)
    assert found is not None
    regressions = found.group(1)
    assert "n00002-xnnpack" in regressions and f"commit {'0001' + '0' * 8}..{night3}" in regressions
    assert "regressed 1.60x" in regressions and "confirmed regression" in regressions
    assert "n00002-xnnpack-confirm" not in regressions  # the confirmation job is not a second regression
    for other in (p for name, p in series_pages(tmp_path / "site").items() if not name.startswith("cnn-rpi5-xnnpack")):
        assert "None found by a night" in text(other)
    listed = text((tmp_path / "site" / "regressions.html").read_text())
    assert "1 regressions found" in listed and "confirmed" in listed and f"{'0001' + '0' * 8}..{night3}" in listed
    nights = text((tmp_path / "site" / "nights.html").read_text())
    assert "3 nights" in nights and "1 regressed" in nights


def test_xnnpack_and_portable_runs_of_one_model_are_two_series(tmp_path: Path) -> None:
    db = stored(tmp_path, Nights(2, backends=("xnnpack", "portable")))
    assert publish(tmp_path / "site", db).series == 2
    index = (tmp_path / "site" / "index.html").read_text()
    assert sorted(re.findall(r'data-backend="(\w+)"', index)) == ["portable", "xnnpack"]
    assert len(series_pages(tmp_path / "site")) == 2


def test_each_series_page_draws_its_data_script_and_links_each_point_to_its_night(tmp_path: Path) -> None:
    db = stored(tmp_path, THIRD_REGRESSED)
    publish(tmp_path / "site", db)
    name, page = next((n, p) for n, p in series_pages(tmp_path / "site").items() if n.startswith("cnn-rpi5-xnnpack"))
    slug = name.removesuffix(".html")
    script = (tmp_path / "site" / "data" / "series" / f"{slug}.js").read_text()
    data = json.loads(script.removeprefix("window.etfarmSeries = ").removesuffix(";\n"))
    columns = data["columns"]
    assert columns["run"] == ["n00000-xnnpack", "n00001-xnnpack", "n00002-xnnpack", "n00002-xnnpack-confirm"]
    assert columns["regressed"] == [False, False, True, False] and columns["confirmed"][2] is True
    assert columns["confirms"] == [None, None, None, "n00002-xnnpack"]
    assert columns["started"][0] == "2026-01-01 00:00:00"  # UTC, as the chart's axis takes it
    # the night's page copied into the site, linked relatively: the site opens from the file system, self-contained
    assert columns["link"][0] == "../nights/n00000-xnnpack.html"
    assert (tmp_path / "site" / "nights" / "n00000-xnnpack.html").read_text() == \
        (tmp_path / "runs" / "nightly-n00000-xnnpack.html").read_text()
    assert all(lo <= p50 <= hi for lo, p50, hi in zip(columns["lo"], columns["p50"], columns["hi"], strict=True))
    assert len(data["layer_names"]) == 8 and all(len(v) == 8 for v in columns["layers"])
    scripts = re.findall(r'<script src="([^"]+)"></script>', page)
    assert scripts == ["../assets/plotly.min.js", f"../data/series/{slug}.js", "../assets/series.js"]
    assert all((tmp_path / "site" / "series" / s).is_file() for s in scripts)
    assert (tmp_path / "site" / "assets" / "plotly.min.js").stat().st_size > 1e6
    assert all(f'id="{chart}"' in page for chart in ("latency", "load", "memory", "layers")) and 'id="llm"' not in page


def test_a_nights_pooled_confirmation_jobs_are_confirmations_and_their_baselines_no_series(tmp_path: Path) -> None:
    """A night names its first confirmation job; the jobs pooled after it (run `<model>-baseline` beside the model,
    as every interleaved confirmation does) are confirmations too, not nights of the series, and the baseline's
    program they ran is no series of its own."""
    db = stored(tmp_path, Nights(3, devices=("rpi5",), models=("cnn",), steps={("rpi5", "cnn", "xnnpack"): (2, 1.6)},
                                 pooled=2))
    published = publish(tmp_path / "site", db)
    assert (published.series, published.runs) == (1, 6)  # 3 nights, the confirmation, 2 pooled; no cnn-baseline
    (slug,) = (name.removesuffix(".html") for name in series_pages(tmp_path / "site"))
    script = (tmp_path / "site" / "data" / "series" / f"{slug}.js").read_text()
    columns = json.loads(script.removeprefix("window.etfarmSeries = ").removesuffix(";\n"))["columns"]
    assert columns["run"][3:] == ["n00002-xnnpack-confirm", "n00002-xnnpack-confirm-more1", "n00002-xnnpack-confirm-more2"]
    assert columns["confirms"] == [None, None, None, *["n00002-xnnpack"] * 3]
    assert columns["regressed"] == [False, False, True, False, False, False]  # one regression, found once


def test_a_new_night_rewrites_the_indexes_and_only_the_pages_of_the_series_it_touched(tmp_path: Path) -> None:
    plan = Nights(3, devices=("pixel8", "rpi5"))
    db = stored(tmp_path, plan)
    first = publish(tmp_path / "site", db)
    assert first.read == 3 and sum(w.startswith("series/") for w in first.written) == 2
    again = publish(tmp_path / "site", db)
    assert again.read == 0 and not [w for w in again.written if w.startswith(("series/", "data/"))]
    stored(tmp_path, Nights(1, devices=("rpi5",)), first=3)  # a night of one device: one series touched
    night = publish(tmp_path / "site", db)
    assert night.read == 1 and [w for w in night.written if w.startswith("series/")] == \
        [w for w in first.written if w.startswith("series/mlp-rpi5")]
    touched = next(w for w in first.written if w.startswith("series/mlp-rpi5")).removeprefix("series/").removesuffix(".html")
    assert {"index.html", "nights.html", "regressions.html", f"data/series/{touched}.js"} <= set(night.written)
    assert len([w for w in night.written if w.startswith("data/")]) == 1  # only the touched series' data
    manifest = json.loads((tmp_path / "site" / SITE_MANIFEST).read_text())
    assert len(manifest["runs"]) == 4 and manifest["store"] == str(db)
    assert manifest["series"][touched]["points"] == 4 and len(manifest["series"]) == 2
    page = (tmp_path / "site" / "series" / f"{touched}.html").read_text()
    assert "n00003-xnnpack" in page  # the new night is on its series' page


def test_an_empty_store_publishes_an_index_that_says_so(tmp_path: Path) -> None:
    for db in (tmp_path / "missing.db", tmp_path / "empty.db"):
        if db.name == "empty.db":
            open_store(db).close()
        publish(tmp_path / db.stem, db)
        assert f"No stored runs: the store {db} holds nothing" in (tmp_path / db.stem / "index.html").read_text()
    assert not (tmp_path / "missing.db").exists()  # publishing never creates a store


def test_an_unreadable_store_is_one_line_naming_it_and_leaves_the_site_as_it_was(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = stored(tmp_path, Nights(2))
    publish(tmp_path / "site", db)
    before = {p: p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()}
    broken = db
    broken.write_bytes(b"not a database " * 100)
    assert main(["publish", "--out", str(tmp_path / "site"), "--store", str(broken)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: the results store {broken}: cannot read it")
    after = {p: p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()}
    assert after == before


def test_a_store_that_fails_while_being_read_writes_nothing(tmp_path: Path) -> None:
    db = stored(tmp_path, Nights(2))
    with sqlite3.connect(db) as conn:  # a store whose rows cannot be read: its events table is gone
        conn.execute("DROP TABLE events")
    with pytest.raises(UsageError, match=f"the results store {db}: cannot read it"):
        publish(tmp_path / "site", db)
    assert list((tmp_path / "site").iterdir()) == []


def test_an_out_that_cannot_be_a_directory_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    assert main(["publish", "--out", str(tmp_path / "file" / "site"), "--store", str(tmp_path / "s.db")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --out {tmp_path / 'file' / 'site'}: cannot create it")


def test_names_are_escaped_in_every_page(tmp_path: Path) -> None:
    evil = "</script><script>alert(1)</script>"
    db = stored(tmp_path, Nights(2, models=(evil,)))
    publish(tmp_path / "site", db)
    for page in [*series_pages(tmp_path / "site").values(), (tmp_path / "site" / "index.html").read_text()]:
        assert "<script>alert(1)" not in page


def test_runs_gone_from_the_store_leave_their_series_and_a_damaged_site_is_read_again(tmp_path: Path) -> None:
    db = stored(tmp_path, Nights(3, backends=("xnnpack", "portable")))
    publish(tmp_path / "site", db)
    with open_store(db) as store:  # the store forgets the portable runs (a store pruned by hand)
        store._conn.execute("DELETE FROM runs WHERE run_id LIKE '%portable'")
    pruned = publish(tmp_path / "site", db)
    assert (pruned.series, pruned.runs, pruned.read) == (1, 3, 0)
    assert len(list((tmp_path / "site" / "series").glob("*.html"))) == 1  # the portable series' page is gone
    assert len(list((tmp_path / "site" / "data" / "series").glob("*.js"))) == 1
    (data,) = (tmp_path / "site" / "data" / "series").glob("*.js")
    data.write_text("garbage")  # what the last publish kept is damaged: everything is read from the store again
    stored(tmp_path, Nights(1), first=3)
    again = publish(tmp_path / "site", db)
    assert (again.series, again.runs, again.read) == (1, 4, 4)
    assert json.loads(data.read_text().removeprefix("window.etfarmSeries = ").removesuffix(";\n"))["columns"]["run"] == [
        f"n{k:05d}-xnnpack" for k in range(4)]


def test_verdict_files_that_cannot_be_read_leave_the_points_unjudged(tmp_path: Path) -> None:
    db = stored(tmp_path, Nights(2))
    for name, garbage in (("verdicts.json", "{not json"), ("night.json", '["a list"]')):
        (tmp_path / "runs" / "n00001-xnnpack" / name).write_text(garbage)
    publish(tmp_path / "site", db)
    (summary,) = json.loads((tmp_path / "site" / SITE_MANIFEST).read_text())["series"].values()
    assert summary["points"] == 2 and summary["verdict"] == "new"  # night 0's verdict; night 1's is unreadable
    assert "1 nights" in text((tmp_path / "site" / "nights.html").read_text())


def test_a_deleted_series_page_is_drawn_again_and_another_stores_site_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = stored(tmp_path, Nights(2, backends=("xnnpack", "portable")))
    first = publish(tmp_path / "site", db)
    page = next(tmp_path / "site" / w for w in first.written if w.startswith("series/"))
    written = page.read_text()
    page.unlink()
    again = publish(tmp_path / "site", db)
    assert again.read == 0 and page.read_text() == written
    copy = tmp_path / "copy.db"
    copy.write_bytes(db.read_bytes())  # the same runs, another store file: its site is not this store's to replace
    before = {p: p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()}
    assert main(["publish", "--out", str(tmp_path / "site"), "--store", str(copy)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --out {tmp_path / 'site'}: it is the site of another results store ({db}); publish into "
                   "a new or empty folder"]
    assert {p: p.read_bytes() for p in (tmp_path / "site").rglob("*") if p.is_file()} == before
    assert publish(tmp_path / "other-site", copy).read == 4


def _gemms(night: int) -> list[tuple[str, str, float]]:
    """XNNPACK's kernels of a three-layer MLP; from night 2 a small new first layer renumbers every GEMM after it."""
    layers = [("fc1", 0.05), ("fc2", 0.151), ("fc3", 0.02)]
    if night >= 2:
        layers.insert(0, ("fc0", 0.013))
    return [(f"Fully Connected (NC, F32) GEMM #{k + 1}", module, ms) for k, (module, ms) in enumerate(layers)]


def test_layer_trends_are_joined_by_op_identity_and_named_by_the_models_layers(tmp_path: Path) -> None:
    db = stored(tmp_path, Nights(3, kernels=_gemms))
    publish(tmp_path / "site", db)
    (script,) = (tmp_path / "site" / "data" / "series").glob("*.js")
    data = json.loads(script.read_text().removeprefix("window.etfarmSeries = ").removesuffix(";\n"))
    names = data["layer_names"]
    assert sorted(names) == ["fc0 Fully Connected", "fc1 Fully Connected", "fc2 Fully Connected", "fc3 Fully Connected"]
    fc2 = names.index("fc2 Fully Connected")
    # keyed by `GEMM #2`, night 2 read 0.013 ms (the new first layer's neighbour): a fake 15x speed-up
    assert [night[fc2] for night in data["columns"]["layers"]] == [0.151, 0.151, 0.151]


def test_series_whose_iterations_differ_are_told_apart_in_their_labels(tmp_path: Path) -> None:
    db = stored(tmp_path, Nights(2, iterations=20))
    stored(tmp_path, Nights(2, iterations=50), first=2)
    publish(tmp_path / "site", db)
    index = (tmp_path / "site" / "index.html").read_text()
    labels = sorted(re.findall(r'</td><td>pixel8</td><td>([^<]*)</td>', index))
    assert labels == ["backend xnnpack, iterations 20", "backend xnnpack, iterations 50"]
    alone = stored(tmp_path / "one", Nights(2))
    publish(tmp_path / "one-site", alone)  # one series: the rule's defaults stay unsaid
    assert re.findall(r'</td><td>pixel8</td><td>([^<]*)</td>', (tmp_path / "one-site" / "index.html").read_text()) == \
        ["backend xnnpack"]
