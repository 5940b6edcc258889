"""A finished run's files have one reader, results/record.py's `RunRecord`, and one writer, the engine's run
directory (run/rundir.py, run/job_stats.py): no other module reads the manifest (`load_manifest`) or builds the path
of manifest.json, stats.csv, samples.npz or verdicts.json itself. Read from the source: a reader that starts from a
path again fails here, naming the module and line."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "orchestrator"

FILES = ("manifest.json", "stats.csv", "samples.npz", "verdicts.json")
NAMES = frozenset({"load_manifest", "MANIFEST", "MANIFEST_NAME", "STATS", "SAMPLES", "VERDICTS", "VERDICTS_JSON"})
OWNERS = ("results/", "run/rundir.py", "run/job_stats.py")  # the record and the engine that writes it
# Left for others to move, each with why (the lead removes a line when its module is rewritten):
LEFT = {  # module prefix -> why it names one of those files without reading a run
    "report/dashboard/target.py": "the published site's own manifest.json (SITE_MANIFEST), not a run's",
}


def uses(source: str) -> list[tuple[int, str]]:
    """Where a module's code names the run's files or reads its manifest: a name, an import, or a string that is
    one of the files (a path component); docstrings, messages and help texts that mention a file are not paths."""
    tree = ast.parse(source)
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in NAMES:
            found.append((node.lineno, node.id))
        elif isinstance(node, ast.Attribute) and node.attr in NAMES:
            found.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom):
            found += [(node.lineno, a.name) for a in node.names if a.name in NAMES]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                and any(node.value == f or node.value.endswith("/" + f) for f in FILES):
            found.append((node.lineno, repr(node.value)))
    return sorted(found)


def offenders() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(OWNERS) or rel.startswith(tuple(LEFT)):
            continue
        out += [f"orchestrator/{rel}:{line}: {what}" for line, what in uses(path.read_text(encoding="utf-8"))]
    return out


def test_only_the_record_and_the_engine_name_a_runs_files() -> None:
    found = offenders()
    assert not found, "take a results.record.RunRecord instead of reading these yourself:\n" + "\n".join(found)


def test_every_module_left_out_is_still_there() -> None:
    """A module left out that was moved or deleted is no longer a reason: its line goes."""
    assert all((PACKAGE / rel).exists() for rel in LEFT), [rel for rel in LEFT if not (PACKAGE / rel).exists()]


@pytest.mark.parametrize("code", [
    "from orchestrator.results.model import load_manifest\njob = load_manifest(root)\n",
    "from orchestrator.results import model\njob = model.load_manifest(root)\n",
    "from orchestrator.run.rundir import STATS\nrows = read(root / STATS)\n",
    "rows = read(root / 'stats.csv')\n",
    "samples = read(f'{root}/samples.npz')\n",
    "found = (root / 'verdicts.json').is_file()\n",
    "ok = (root / 'manifest.json').is_file()\n",
])
def test_a_reader_of_its_own_is_caught(code: str) -> None:
    assert uses(code)


@pytest.mark.parametrize("code", [
    '"""Reads DIR/stats.csv through its record."""\nrows = record.rows(device, model)\n',
    "raise DataError(f'{path}: not an etfarm stats.csv')\n",
    "job = RunRecord(root).job\n",
])
def test_words_about_the_files_are_not_paths(code: str) -> None:
    assert not uses(code)
