"""`etfarm publish`: the dashboard of a big store, from scratch and after one more night, and its index in Chromium.

    python -m benchmarks.bench_publish [--nights 1000] [--devices 5] [--models 10] [--backends 2] [--store DIR] [--json]

Data: a synthetic store (tests/helpers/synthetic_store.py) recorded through the real store: `nights` nights, each
one job per backend over devices x models (the default: 5 x 10 x 2 = 100 series, 2,000 runs, 100,000 points; 3
process runs of 10 executions and 8 layers each), a few series stepping up 30 % (their nights regressed and
confirmed), verdicts.json and night.json beside every run. `--store DIR` keeps the store there between runs.

Measured (one round each; this host is shared and noisy):
- from scratch: `publish` into an empty DIR (every run read from the store, every page written);
- unchanged: `publish` again with nothing new (every run kept from DIR/data/runs);
- a new night: one more night recorded, then `publish` (its runs read, the indexes and every touched page written);
- the index in Chromium: headless Chromium opening DIR/index.html from the file system with the network blocked:
  the page's own load time (Navigation Timing, loadEventEnd) and the whole process (browser start included).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.report.dashboard.site import publish  # noqa: E402 - after the sys.path line above
from orchestrator.store import open_store  # noqa: E402
from tests.helpers.synthetic_store import Nights, record_nights  # noqa: E402

PROBE = ('<script>window.addEventListener("load", function () { setTimeout(function () { var t = performance.timing;'
         ' var p = document.createElement("pre"); p.id = "load-ms"; p.textContent = t.loadEventEnd - t.navigationStart;'
         ' document.body.appendChild(p); }, 0); });</script></body>')


def plan(args: argparse.Namespace, nights: int) -> Nights:
    devices = tuple(f"dev{k}" for k in range(args.devices))
    models = tuple(f"model{k}" for k in range(args.models))
    backends = ("xnnpack", "portable")[:args.backends]
    steps = {(devices[k % len(devices)], models[k % len(models)], backends[0]): (args.nights * (k + 1) // 5, 1.3)
             for k in range(4)}
    return Nights(nights, devices=devices, models=models, backends=backends, steps=steps)


def index_in_chromium(out: Path, work: Path) -> tuple[float, float]:
    """(the page's load time, the Chromium process's wall time) in seconds, index.html from file:// offline."""
    probe = out / "index-probe.html"  # beside index.html: the same relative links
    probe.write_text((out / "index.html").read_text().replace("</body>", PROBE, 1))
    start = time.perf_counter()
    done = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={work}",
                           "--proxy-server=http://127.0.0.1:9", "--virtual-time-budget=10000", "--dump-dom",
                           probe.as_uri()], capture_output=True, text=True, timeout=300, check=False)
    wall = time.perf_counter() - start
    probe.unlink()
    found = re.search(r'<pre id="load-ms">(\d+)</pre>', done.stdout)
    return (int(found.group(1)) / 1000 if found else float("nan")), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=1000)
    parser.add_argument("--devices", type=int, default=5)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--backends", type=int, default=2, choices=(1, 2))
    parser.add_argument("--store", type=Path, help="keep the synthetic store here (made once)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
        where = args.store or Path(tmp) / "store"
        db = where / "results.db"
        figures: dict[str, float] = {}
        if not db.exists():
            start = time.perf_counter()
            with open_store(db) as store:
                record_nights(store, where / "runs", plan(args, args.nights))
            figures["generate_s"] = time.perf_counter() - start
        out = Path(tmp) / "site"
        start = time.perf_counter()
        first = publish(out, db)
        figures["from_scratch_s"] = time.perf_counter() - start
        start = time.perf_counter()
        publish(out, db)
        figures["unchanged_s"] = time.perf_counter() - start
        with open_store(db) as store:
            nights_now = len({s.run_id.split("-")[0] for s in store.series_rows().stamps()})
            record_nights(store, where / "runs", plan(args, 1), first=nights_now)
        start = time.perf_counter()
        night = publish(out, db)
        figures["new_night_s"] = time.perf_counter() - start
        figures["index_load_s"], figures["chromium_wall_s"] = index_in_chromium(out, Path(tmp) / "chromium")
        figures.update(series=first.series, runs=night.runs, new_night_pages=sum(w.endswith(".html") for w in night.written),
                       index_kib=(out / "index.html").stat().st_size / 1024)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for name, value in figures.items():
            print(f"{name:>18}: {value:.2f}" if isinstance(value, float) else f"{name:>18}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
