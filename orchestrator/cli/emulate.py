"""`etfarm devices emulate NAME...`: emulated devices on this host, in the foreground, and an inventory naming them.

The inventory is written (atomically) once every device answers, so a script may wait for the file; it is removed
again when the devices stop (SIGINT or SIGTERM: exit 0, nothing left running; the phone's mounts live in its
daemon's own mount namespace). The devices' files (keys, workdirs, the phone's root) go too, unless --dir kept
them somewhere of the user's choosing.
"""

from __future__ import annotations

import signal
import tempfile
from pathlib import Path
from typing import Annotated

import typer

HELP = ("Start emulated devices on this host (rpi5, rpi4: sshd on loopback + qemu-aarch64; pixel8: the adb server "
        "+ etfarm's phone daemon) until Ctrl-C or SIGTERM, and write an inventory naming them. Timings are qemu's, "
        "not the hardware's: every report marks them emulated.")


def emulate(
    names: Annotated[list[str], typer.Argument(metavar="NAME", help="Devices to emulate: rpi5, rpi4, pixel8",
                                               show_default=False)],
    inventory: Annotated[Path, typer.Option("--inventory", help="Inventory file to write once all are ready "
                                            "(removed when they stop).")] = Path("emulated-devices.yaml"),
    state_dir: Annotated[Path | None, typer.Option("--dir", help="Keep the devices' files (keys, workdirs, the "
                                                   "phone's root) here; default a temporary folder, removed at "
                                                   "stop.")] = None,
) -> None:
    # loaded when the command runs: cli/__init__ imports every command module to register it
    import yaml

    from orchestrator.base.cache import write_text_atomic
    from orchestrator.config import load_inventory
    from orchestrator.emulate.fleet import check_names, remove_tree, start_fleet

    wanted = check_names(names)
    root = state_dir.resolve() if state_dir else Path(tempfile.mkdtemp(prefix="etfarm-emulate-"))
    typer.echo(f"starting {', '.join(wanted)} (files in {root}) ...", err=True)
    fleet, written = None, False
    try:
        fleet = start_fleet(wanted, root)
        write_text_atomic(inventory, yaml.safe_dump(fleet.inventory(), sort_keys=False))
        written = True
        load_inventory(inventory)  # what we wrote is an inventory etfarm reads (one line and exit 2 otherwise)
        typer.echo(_usage(inventory, wanted))
        while True:
            signal.pause()
    except KeyboardInterrupt:
        pass  # SIGINT / SIGTERM: the way to stop; exit 0 once everything is stopped
    finally:
        if fleet is not None:
            fleet.stop()
        if written:
            inventory.unlink(missing_ok=True)
        if state_dir is None:
            remove_tree(root)
    typer.echo(f"stopped {', '.join(wanted)}: nothing left running", err=True)


def _usage(inventory: Path, names: list[str]) -> str:
    devices = ",".join(names)
    return "\n".join([
        f"ready: {', '.join(names)}; inventory {inventory}",
        "try:",
        f"  etfarm devices --config {inventory}",
        f"  etfarm run --config {inventory} --devices {devices} --model configs/models/tiny_cnn.py:build "
        "--out runs/fleet",
        "timings are emulation (qemu on this host), marked so in every report; Ctrl-C or SIGTERM stops them",
    ])
