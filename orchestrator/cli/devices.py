"""`etfarm devices`: list the inventory with reachability; check one; trust an SSH host key; emulate some."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from device_agents import trust_host_key
from device_agents.facts import AndroidFacts, DeviceFacts, shown
from orchestrator.base.errors import EXIT_DEVICE_FAILED, one_line
from orchestrator.cli.emulate import HELP as EMULATE_HELP
from orchestrator.cli.emulate import emulate
from orchestrator.cli.options import ConfigOption, JsonOption
from orchestrator.config import load_inventory
from orchestrator.report import format_table, json_text

devices_app = typer.Typer(
    help="List, check and trust devices of the inventory. Health: ok (answered at once), degraded (answered "
         "after retried transport faults, or slower than 5 s), offline (no answer within the retry budget, or "
         "refused: host key, login, workdir).",
    no_args_is_help=False)


def register(app: typer.Typer) -> None:
    app.add_typer(devices_app, name="devices")


devices_app.command("emulate", help=EMULATE_HELP)(emulate)


@devices_app.callback(invoke_without_command=True)
def devices(
    ctx: typer.Context,
    as_json: JsonOption = False,
    config: ConfigOption = None,
    no_check: Annotated[bool, typer.Option("--no-check", help="List without connecting.")] = False,
) -> None:
    """List devices with transport, target, health and facts.

    Health: ok (answered at once), degraded (answered after retried transport faults, or slowly),
    offline (no answer within the retry budget, or refused: host key, login, workdir). Adb devices that
    an adb server sees and the inventory does not name are listed too, as `adb:SERIAL` (what --devices takes)."""
    if ctx.invoked_subcommand is not None:
        return
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from device_agents.adb.discover import unnamed_devices
    from orchestrator.run.device.probe import entry_json, listing, probe_all, unnamed_entry

    inventory = load_inventory(config)
    specs = list(inventory.devices.values())
    entries = [listing(s) for s in specs] if no_check else probe_all(specs)
    entries += [unnamed_entry(seen, checked=not no_check) for seen in unnamed_devices(specs)]
    if as_json:
        typer.echo(json_text({"config": str(inventory.path) if inventory.path else None,
                              "devices": [entry_json(e) for e in entries]}))
        return

    rows = [[e["name"], e["transport"], e["target"] or "?", e["address"], _status(e), _facts_line(e["facts"])]
            for e in entries]
    header = ["device", "transport", "target", "address", "status", "facts"]
    if any(e["description"] for e in entries):  # only inventories that describe their devices get the column
        header.insert(1, "description")
        rows = [[row[0], e["description"], *row[1:]] for row, e in zip(rows, entries, strict=True)]
    typer.echo(format_table(header, rows, "l" * len(header)))
    for entry in entries:  # the whole reason and its fix, never cut by the table's width
        if entry["reachable"] is False and entry.get("error"):
            typer.echo(f"{entry['name']}: {one_line(str(entry['error']))}")
    if inventory.path is None:
        typer.echo("(no inventory file: only the built-in 'local' device; see --config / ETFARM_CONFIG)")
    if any(not e["in_inventory"] for e in entries):
        typer.echo("(adb:SERIAL: seen by an adb server, not in the inventory; run one with --devices adb:SERIAL)")


@devices_app.command("check")
def check(name: Annotated[str, typer.Argument(help="Device name")], config: ConfigOption = None,
          as_json: JsonOption = False) -> None:
    """Connect to NAME, describe it, and report (a line of text; --json: the whole entry); exit 1 when unreachable."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.run.device.probe import entry_json, probe

    entry = probe(load_inventory(config).select(name)[0])
    if as_json:
        typer.echo(json_text(entry_json(entry)))
    else:
        facts = _facts_line(entry["facts"])
        typer.echo(f"{entry['name']} ({entry['transport']}, {entry['target'] or '?'}, {entry['address']}): "
                   f"{_status(entry)}" + (f"; {facts}" if facts else ""))
        if entry["reachable"] is False and entry.get("error"):
            typer.echo(f"{entry['name']}: {one_line(str(entry['error']))}")
    if not entry["reachable"]:
        raise typer.Exit(EXIT_DEVICE_FAILED)


@devices_app.command("trust")
def trust(name: Annotated[str, typer.Argument(help="SSH device name")], config: ConfigOption = None) -> None:
    """Record NAME's current SSH host key in its known_hosts file, on purpose."""
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


def _facts_line(facts: DeviceFacts) -> str:
    """What the device is, in one line: model and SoC, Android version, ABI, cores (clusters), clocks, governors,
    temperatures and battery."""
    if not facts:
        return ""
    android = facts.android or AndroidFacts()
    parts = []
    if android.model:
        parts.append(f"{android.model}" + (f" ({android.soc_model})" if android.soc_model else ""))
    if android.release:
        parts.append(f"Android {android.release}" + (f" (SDK {android.sdk})" if android.sdk else ""))
    parts.append(str(android.abi or shown(facts.abi, "?")))
    sizes = "+".join(shown(c.cores, "?") for c in facts.clusters)
    parts.append(f"{shown(facts.cores, '?')} cores" + (f" ({sizes})" if len(facts.clusters) > 1 else ""))
    cpus = [*facts.clusters, *facts.cpus]
    freqs = [c.max_khz for c in cpus if isinstance(c.max_khz, int)]
    if freqs:
        parts.append(f"max {max(freqs) / 1e6:.2f} GHz")
    governors = sorted({str(c.governor) for c in cpus if c.governor})
    if governors:
        parts.append("governor " + "/".join(governors))
    if android.skin_c is not None:
        parts.append(f"skin {android.skin_c} °C")
    if any(value is not None for value in (android.battery_level, android.battery_status, android.plugged)):
        plugged = f", {android.plugged}" if android.plugged not in (None, "none") else ""
        warm = f", {android.battery_c} °C" if android.battery_c is not None else ""
        parts.append(f"battery {shown(android.battery_level, '?')}% {shown(android.battery_status, '?')}{plugged}{warm}")
    return ", ".join(parts)
