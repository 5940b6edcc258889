"""Staging: make workdir/<rel> equal to each local file, sending only what differs.

Files already on the device with the same sha256 are skipped; each pushed file lands as
`<name>.partial` and is renamed into place only when whole, and is checked by sha256 on the device
afterwards. Two device commands in all, whatever the number of files: round trips dominate on slow
links. The transport's `_push` hook moves the bytes.
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.base.cache import sha256_file
from orchestrator.base.errors import DeviceError

if TYPE_CHECKING:
    from device_agents.base import DeviceAgent

# A sha256 pass (DeviceAgent.hash_timeout_s) gets the housekeeping deadline plus the time to hash its bytes at this rate
# (a slow board's sha256sum does ~50 MB/s; a quarter of that leaves room for a busy one).
HASH_BYTES_PER_SEC = 12_000_000

Push = Callable[[Path, str], None]  # (local file, absolute device path)


@dataclass(frozen=True)
class StageReport:
    pushed: tuple[str, ...]
    skipped: tuple[str, ...]
    bytes_pushed: int


def stage(agent: DeviceAgent, files: Mapping[str, Path], push: Push) -> StageReport:
    """Push each file whose sha256 differs on the device; verify what was pushed."""
    dirs = sorted({posixpath.dirname(agent.remote_path(rel)) for rel in files})
    with ThreadPoolExecutor(max_workers=1) as pool:  # hash locally while the device hashes
        local_future = pool.submit(lambda: {rel: sha256_file(path) for rel, path in files.items()})
        nbytes = sum(path.stat().st_size for path in files.values())
        remote_hashes = run_then_hash(agent, [["mkdir", "-p", "--", *dirs]], list(files), nbytes)
        local_hashes = local_future.result()
    to_push = [rel for rel in files if remote_hashes.get(rel) != local_hashes[rel]]
    finalize: list[list[str]] = []
    pushed_bytes = 0
    for rel in to_push:
        local, final = files[rel], agent.remote_path(rel)
        partial = f"{final}.partial"  # renamed into place only when complete
        push(local, partial)
        mode = "755" if os.access(local, os.X_OK) else "644"
        finalize += [["chmod", mode, "--", partial], ["mv", "-f", "--", partial, final]]
        pushed_bytes += local.stat().st_size
    if to_push:
        after = run_then_hash(agent, finalize, to_push, pushed_bytes)
        bad = [rel for rel in to_push if after.get(rel) != local_hashes[rel]]
        if bad:
            raise DeviceError(agent.spec.name, f"pushed files do not match their sha256 on the device: {', '.join(bad)}")
    skipped = tuple(rel for rel in files if rel not in to_push)
    return StageReport(pushed=tuple(to_push), skipped=skipped, bytes_pushed=pushed_bytes)


def run_then_hash(agent: DeviceAgent, steps: Sequence[Sequence[str]], rels: Sequence[str], nbytes: int = 0) -> dict[str, str]:
    """Run each argv step (stopping at the first failure), then sha256sum the files, in one command.
    Returns the sha256 of each workdir-relative file that exists."""
    if not rels:
        if steps:
            agent.check(["sh", "-c", " && ".join(shlex.join(step) for step in steps)], persistent=True)
        return {}
    paths = {agent.remote_path(rel): rel for rel in rels}
    # Missing files make sha256sum exit 1; the lines of the present ones are still the answer.
    hashing = f"{{ {shlex.join(['sha256sum', '--', *paths])} || true; }}"
    script = " && ".join([*(shlex.join(step) for step in steps), hashing])
    result = agent.check(["sh", "-c", script], timeout_s=agent.hash_timeout_s(nbytes), persistent=True)
    hashes: dict[str, str] = {}
    for line in result.stdout.splitlines():
        digest, _, path = line.partition("  ")
        if path in paths and len(digest) == 64:
            hashes[paths[path]] = digest
    return hashes
