"""The etfarm known_hosts file, read by us rather than by paramiko.

paramiko's loader raises on OpenSSH marker lines (`@cert-authority`, `@revoked`) with a
traceback. Here a revoked key is never trusted (and a connection offering it is refused as
revoked), certificate-authority lines are skipped (etfarm trusts plain host keys only: a CA
line grants nothing), and a malformed line is an error naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import paramiko

from orchestrator.base.errors import DeviceError

REVOKED = "@revoked"
CERT_AUTHORITY = "@cert-authority"


@dataclass(frozen=True)
class KnownHosts:
    entries: tuple[paramiko.hostkeys.HostKeyEntry, ...]  # trusted keys (never a revoked one)
    revoked: frozenset[str]  # "keytype base64" of every @revoked key

    def is_revoked(self, key: paramiko.PKey) -> bool:
        return key_id(key) in self.revoked

    def install(self, client: paramiko.SSHClient) -> None:
        keys = client.get_host_keys()
        for entry in self.entries:
            for name in entry.hostnames:
                keys.add(name, entry.key.get_name(), entry.key)


def key_id(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.get_base64()}"


def load_known_hosts(path: Path, device: str) -> KnownHosts:
    """Trusted and revoked keys of `path` (empty when the file does not exist)."""
    if not path.is_file():
        return KnownHosts((), frozenset())
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DeviceError(device, f"cannot read known_hosts {path}: {exc}") from None
    entries: list[paramiko.hostkeys.HostKeyEntry] = []
    revoked: set[str] = set()
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith(CERT_AUTHORITY):
            continue
        marker = line.startswith(REVOKED)
        entry = _entry(line[len(REVOKED):].strip() if marker else line, lineno)
        if entry is None:
            raise DeviceError(device, f"{path}: line {lineno}: not a known_hosts entry etfarm can read")
        (revoked.add(key_id(entry.key)) if marker else entries.append(entry))
    return KnownHosts(tuple(e for e in entries if key_id(e.key) not in revoked), frozenset(revoked))


def _entry(line: str, lineno: int) -> paramiko.hostkeys.HostKeyEntry | None:
    try:
        return paramiko.hostkeys.HostKeyEntry.from_line(line, lineno)
    except (paramiko.hostkeys.InvalidHostKey, ValueError, IndexError):
        return None
