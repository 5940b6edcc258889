"""`etfarm devices`: list the inventory with reachability; check one; trust an SSH host key."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from orchestrator.cli.options import ConfigOption, JsonOption
from orchestrator.errors import EXIT_DEVICE_FAILED, one_line

devices_app = typer.Typer(
    help="List, check and trust devices of the inventory. Health: ok (answered at once), degraded (answered "
         "after retried transport faults, or slower than 5 s), offline (no answer within the retry budget, or "
         "refused: host key, login, workdir).",
    no_args_is_help=False)


def register(app: typer.Typer) -> None:
    app.add_typer(devices_app, name="devices")


@devices_app.callback(invoke_without_command=True)
def devices(
    ctx: typer.Context,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    no_check: Annotated[bool, typer.Option("--no-check", help="List without connecting.")] = False,
) -> None:
    """List devices with transport, target, health and facts.

    Health: ok (answered at once), degraded (answered after retried transport faults, or slowly),
    offline (no answer within the retry budget, or refused: host key, login, workdir)."""
    if ctx.invoked_subcommand is not None:
        return
    from orchestrator.config import load_inventory
    from orchestrator.report import format_table, json_text
    from orchestrator.run.probe import listing, probe_all

    inventory = load_inventory(config)
    specs = list(inventory.devices.values())
    entries = [listing(s) for s in specs] if no_check else probe_all(specs)
    if as_json:
        typer.echo(json_text({"config": str(inventory.path) if inventory.path else None, "devices": entries}))
        return

    rows = [[e["name"], e["transport"], e["target"], e["address"], _status(e), _facts_line(e["facts"])] for e in entries]
    typer.echo(format_table(["device", "transport", "target", "address", "status", "facts"], rows, "llllll"))
    for entry in entries:  # the whole reason and its fix, never cut by the table's width
        if entry["reachable"] is False and entry.get("error"):
            typer.echo(f"{entry['name']}: {one_line(str(entry['error']))}")
    if inventory.path is None:
        typer.echo("(no inventory file: only the built-in 'local' device; see --config / ETFARM_CONFIG)")


@devices_app.command("check")
def check(name: Annotated[str, typer.Argument(help="Device name")], config: ConfigOption = None) -> None:
    """Connect to NAME, describe it, and report; exit 1 when unreachable."""
    from orchestrator.config import load_inventory
    from orchestrator.report import json_text
    from orchestrator.run.probe import probe

    entry = probe(load_inventory(config).select(name)[0])
    typer.echo(json_text(entry))
    if not entry["reachable"]:
        raise typer.Exit(EXIT_DEVICE_FAILED)


@devices_app.command("trust")
def trust(name: Annotated[str, typer.Argument(help="SSH device name")], config: ConfigOption = None) -> None:
    """Record NAME's current SSH host key in its known_hosts file, on purpose."""
    from device_agents import trust_host_key
    from orchestrator.config import load_inventory

    trusted = trust_host_key(load_inventory(config).select(name)[0])
    typer.echo(f"trusted {name}: {trusted.fingerprint} -> {trusted.known_hosts}")


def _status(entry: dict[str, Any]) -> str:
    if entry["reachable"] is None:
        return "not checked"
    if entry["health"] == "degraded":
        tries = len(entry["attempts"])
        return f"degraded ({tries} failed tr{'y' if tries == 1 else 'ies'}, {entry['elapsed_s']:.1f} s)"
    if entry["reachable"]:
        return "ok"
    first = (entry["error"] or "").splitlines()[0] if entry["error"] else ""
    return f"offline: {first[:40]}…" + " (below)" if len(first) > 40 else f"offline: {first}"


def _facts_line(facts: dict[str, Any]) -> str:
    if not facts:
        return ""
    parts = [str(facts.get("abi", "?")), f"{facts.get('cores', '?')} cores"]
    model = facts.get("android", {}).get("product", {}).get("model") if isinstance(facts.get("android"), dict) else None
    if model:
        parts.insert(0, str(model))
    freqs = [c.get("max_khz") for c in facts.get("cpus", {}).values() if isinstance(c, dict) and c.get("max_khz")]
    if freqs:
        parts.append(f"max {max(freqs) / 1e6:.2f} GHz")
    governors = sorted({c.get("governor") for c in facts.get("cpus", {}).values() if isinstance(c, dict) and c.get("governor")})
    if governors:
        parts.append("governor " + "/".join(governors))
    return ", ".join(parts)
