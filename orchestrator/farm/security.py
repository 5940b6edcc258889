"""TLS for the scheduler, workers and clients: a `distributed.Security` from three files.

Workers run whatever the scheduler sends them, so an open scheduler is remote code execution on
every USB host of the farm. With a CA, a certificate and its key, every connection is mutual TLS
(`require_encryption`): only holders of a certificate signed by that CA can join or submit.
A dask configuration file (`distributed.comm.tls.*`, DASK_CONFIG) works as well when no option is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.base.errors import UsageError
from orchestrator.farm import require_distributed


def make_security(ca_file: Path | None, cert: Path | None, key: Path | None) -> Any:
    """`distributed.Security` for mutual TLS, or None (dask's own configuration applies) when no file is given."""
    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if not any(given.values()):
        return None
    absent = [option for option, path in given.items() if path is None]
    if absent:
        raise UsageError(f"{', '.join(absent)}: TLS needs --tls-ca-file, --tls-cert and --tls-key together")
    for option, path in given.items():
        assert path is not None
        if not path.is_file():
            raise UsageError(f"{option} {path}: no such file")
    require_distributed()
    from distributed.security import Security

    return Security(tls_ca_file=str(ca_file), tls_client_cert=str(cert), tls_client_key=str(key),
                    tls_worker_cert=str(cert), tls_worker_key=str(key), tls_scheduler_cert=str(cert),
                    tls_scheduler_key=str(key), require_encryption=True)
