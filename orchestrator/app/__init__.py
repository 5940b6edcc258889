"""The application layer: what a command does, between the CLI (which only parses) and the stages.

`etfarm run` is `run.run_command(JobRequest, Console)`: check the options, run the job (resume,
A/B, on a farm, or on this host), then hand its typed result, in memory, to the results store, the
numerics, the report and the printed summary (docs/architecture.md, "The application layer").

Public API, imported lazily on first use (PEP 562) so that importing the package stays light:
    console: Console                    where a command's lines go (stdout, stderr)
    request: JobRequest                 `etfarm run`'s options, checked
    run: run_command                    `etfarm run`
    record: record_job                  a finished job into the results store (a warning when it cannot)
"""

from __future__ import annotations

from orchestrator.base.lazy import lazy_api

_API = {
    "Console": "console",
    "JobRequest": "request",
    "run_command": "run",
    "record_job": "record",
}
__all__ = sorted(_API)

__getattr__ = lazy_api(__name__, _API)
