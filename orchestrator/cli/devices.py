"""`etfarm devices`: list the inventory with reachability; check one; trust an SSH host key."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from device_agents import trust_host_key
from orchestrator.cli.options import ConfigOption, JsonOption
from orchestrator.config import load_inventory
from orchestrator.errors import EXIT_DEVICE_FAILED, one_line
from orchestrator.report import format_table, json_text

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
    offline (no answer within the retry budget, or refused: host key, login, workdir). Adb devices that
    an adb server sees and the inventory does not name are listed too, as `adb:SERIAL` (what --devices takes)."""
    if ctx.invoked_subcommand is not None:
        return
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.run.probe import listing, probe_all, unnamed_adb_devices, unnamed_entry

    inventory = load_inventory(config)
    specs = list(inventory.devices.values())
    entries = [listing(s) for s in specs] if no_check else probe_all(specs)
    entries += [unnamed_entry(seen, checked=not no_check) for seen in unnamed_adb_devices(specs)]
    if as_json:
        typer.echo(json_text({"config": str(inventory.path) if inventory.path else None, "devices": entries}))
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
def check(name: Annotated[str, typer.Argument(help="Device name")], config: ConfigOption = None) -> None:
    """Connect to NAME, describe it, and report; exit 1 when unreachable."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.run.probe import probe

    entry = probe(load_inventory(config).select(name)[0])
    typer.echo(json_text(entry))
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


def _facts_line(facts: dict[str, Any]) -> str:
    """What the device is, in one line: model and SoC, Android version, ABI, cores (clusters), clocks, governors,
    temperatures and battery."""
    if not facts:
        return ""
    android = _dict(facts.get("android"))
    product, soc, build = _dict(android.get("product")), _dict(android.get("soc")), _dict(android.get("build"))
    parts = []
    if product.get("model"):
        parts.append(f"{product['model']}" + (f" ({soc['model']})" if soc.get("model") else ""))
    release = _dict(build.get("version"))
    if release.get("release"):
        parts.append(f"Android {release['release']}" + (f" (SDK {release['sdk']})" if release.get("sdk") else ""))
    parts.append(str(_dict(product.get("cpu")).get("abi") or facts.get("abi", "?")))
    clusters = [c for c in _dict(facts.get("clusters")).values() if isinstance(c, dict)]
    sizes = "+".join(str(c.get("cores", "?")) for c in clusters)
    parts.append(f"{facts.get('cores', '?')} cores" + (f" ({sizes})" if len(clusters) > 1 else ""))
    cpus = [c for c in [*clusters, *_dict(facts.get("cpus")).values()] if isinstance(c, dict)]
    freqs = [c["max_khz"] for c in cpus if isinstance(c.get("max_khz"), int)]
    if freqs:
        parts.append(f"max {max(freqs) / 1e6:.2f} GHz")
    governors = sorted({str(c["governor"]) for c in cpus if c.get("governor")})
    if governors:
        parts.append("governor " + "/".join(governors))
    temp, battery = _dict(android.get("temp")), _dict(android.get("battery"))
    if "skin_c" in temp:
        parts.append(f"skin {temp['skin_c']} °C")
    if battery:
        plugged = f", {battery['plugged']}" if battery.get("plugged") not in (None, "none") else ""
        warm = f", {temp['battery_c']} °C" if "battery_c" in temp else ""
        parts.append(f"battery {battery.get('level', '?')}% {battery.get('status', '?')}{plugged}{warm}")
    return ", ".join(parts)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
