"""A tiny adb device daemon: the device side of the adb transport, over TCP.

Run as a script (stdlib only): `python adb_daemon.py --root DIR [--port N]`; it
prints `PORT <n>` once it listens. The real adb server attaches with
`adb connect 127.0.0.1:<n>` and from then on talks to it like to a phone:

- CNXN without authentication, answered with version 0x01000001, 256 KiB maxdata
  and a banner with an empty feature list (no shell_v2, no stat_v2);
- streams: OPEN / OKAY / WRTE / CLSE; every WRTE we send waits for the host's OKAY;
- `shell:<cmd>` runs `/bin/sh -c <cmd>` with DIR as its cwd, stdout+stderr merged
  (shell v1: no exit status on the wire);
- `sync:` STAT / LIST / SEND / RECV / QUIT (AOSP adb/SYNC.TXT).

With `--chroot`, DIR is the device's `/` (an emulated Android phone, testbed/android_root.py):
shell commands run as `chroot DIR /system/bin/sh -c <cmd>` with adb's Android environment, sync
paths are device paths inside DIR, and /proc and /dev are bind-mounted into DIR at start. Run it
in its own mount namespace (`unshare --mount`, as testbed/android.py does) so those mounts stay
invisible to the host. With `--binfmt QEMU` as well (in a user namespace of its own, Linux >= 6.7),
the daemon mounts that namespace's own binfmt_misc instance and registers QEMU for aarch64 ELF
files there (flag F: the interpreter is opened now, so the phone's root need not hold it): the
phone's shell then starts aarch64 programs as a phone does, with no exec_prefix, and nothing
outside the daemon's namespace sees the registration.

Wire facts from AOSP adb/protocol.txt: a 24-byte little-endian header (command,
arg0, arg1, data length, data checksum, magic = command ^ 0xffffffff). Peers at
version 0x01000001 skip the checksum, so we send 0.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

A_CNXN, A_OPEN, A_OKAY, A_WRTE, A_CLSE = (int.from_bytes(c, "little") for c in (b"CNXN", b"OPEN", b"OKAY", b"WRTE", b"CLSE"))
VERSION = 0x01000001
MAX_PAYLOAD = 256 * 1024
SYNC_DATA_MAX = 64 * 1024
HEADER = struct.Struct("<6I")
Handler = Callable[["Stream", str, "DeviceRoot"], Awaitable[None]]
BANNER = b"device::ro.product.name=etfarm_testbed;ro.product.model=etfarm-emulated;ro.product.device=etfarm;features="
ANDROID_BANNER = b"device::ro.product.name=shiba;ro.product.model=Pixel 8;ro.product.device=shiba;features="
ANDROID_SHELL = "/system/bin/sh"
ANDROID_PATH = ("/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin:/system_ext/bin:/system/bin:"
                "/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin")
TAG_VAR = "ETFARM_TESTBED_TAG"  # testbed/__init__.py: teardown finds every process by it


class DeviceRoot:
    """Where the device's files live on this host, and how its shell is started."""

    def __init__(self, root: Path, chroot: bool) -> None:
        self.root, self.chroot = root, chroot
        self.banner = ANDROID_BANNER if chroot else BANNER

    def host_path(self, path: str) -> str:
        """The host path of a device path (the same path unless the device is chrooted)."""
        return str(self.root / os.path.normpath("/" + path).lstrip("/")) if self.chroot else path

    def shell(self, command: str) -> tuple[list[str], dict[str, str] | None]:
        """argv and environment of a shell command (None: inherit this daemon's)."""
        if not self.chroot:
            return ["/bin/sh", "-c", command], None
        env = {"PATH": ANDROID_PATH, "HOME": "/", "ANDROID_DATA": "/data", "ANDROID_ROOT": "/system",
               "TMPDIR": "/data/local/tmp", "USER": "shell", "HOSTNAME": "shiba"}
        if TAG_VAR in os.environ:
            env[TAG_VAR] = os.environ[TAG_VAR]
        return [shutil.which("chroot") or "/usr/sbin/chroot", str(self.root), ANDROID_SHELL, "-c", command], env

    def mount(self) -> None:
        """Bind /proc and /dev into the chroot (in this daemon's own mount namespace)."""
        for name in ("proc", "dev"):
            subprocess.run(["mount", "--rbind", f"/{name}", str(self.root / name)], check=True, capture_output=True)


# binfmt_misc's aarch64 ELF entry, as Debian's qemu-user-static registers it (magic and mask of the ELF header).
AARCH64_MAGIC = b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00"
AARCH64_MASK = b"\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff"


def register_binfmt(qemu: str, where: Path) -> None:
    """Register `qemu` for aarch64 ELF files in this user namespace's own binfmt_misc instance.

    Refused in the machine's first user namespace, where the instance is the host's: registering
    there would change how every process on the machine runs aarch64 files."""
    with open("/proc/self/uid_map") as fh:
        if fh.read().split() == ["0", "0", "4294967295"]:
            raise SystemExit("--binfmt needs a user namespace of its own (unshare --user --map-root-user)")
    where.mkdir(exist_ok=True)  # a mount point beside the phone's root: the mount is this namespace's alone
    subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", where], check=True, capture_output=True)

    def hexed(data: bytes) -> str:  # binfmt_misc reads bytes written as \xHH
        return "".join(f"\\x{b:02x}" for b in data)

    with open(where / "register", "w") as fh:
        fh.write(f":qemu-aarch64:M::{hexed(AARCH64_MAGIC)}:{hexed(AARCH64_MASK)}:{qemu}:F")


class Stream:
    """One adb stream: bytes in from the host's WRTEs, bytes out as acknowledged WRTEs."""

    def __init__(self, conn: Connection, local_id: int, remote_id: int) -> None:
        self.conn, self.local_id, self.remote_id = conn, local_id, remote_id
        self.inbox = asyncio.StreamReader(limit=1 << 30)
        self.acked = asyncio.Event()
        self.host_closed = asyncio.Event()
        self.closed = False

    async def write(self, data: bytes) -> None:
        for start in range(0, len(data), self.conn.max_payload):
            if self.closed:
                raise ConnectionResetError("stream closed by the host")
            self.acked.clear()
            await self.conn.send(A_WRTE, self.local_id, self.remote_id, data[start : start + self.conn.max_payload])
            await self.acked.wait()

    async def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.inbox.feed_eof()
            self.acked.set()
            self.conn.streams.pop(self.local_id, None)
            await self.conn.send(A_CLSE, self.local_id, self.remote_id)

    def closed_by_host(self) -> None:
        self.closed = True
        self.host_closed.set()
        self.inbox.feed_eof()
        self.acked.set()


class Connection:
    """One transport (one TCP connection from the adb server)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, root: DeviceRoot) -> None:
        self.reader, self.writer, self.root = reader, writer, root
        self.streams: dict[int, Stream] = {}
        self.next_id = 1
        self.max_payload = MAX_PAYLOAD
        self.tasks: set[asyncio.Task[None]] = set()

    async def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        self.writer.write(HEADER.pack(command, arg0, arg1, len(data), 0, command ^ 0xFFFFFFFF) + data)
        await self.writer.drain()

    async def serve(self) -> None:
        try:
            while True:
                command, arg0, arg1, length, _checksum, magic = HEADER.unpack(await self.reader.readexactly(HEADER.size))
                if magic != command ^ 0xFFFFFFFF:
                    raise ValueError(f"bad magic in header {command:#x}")
                data = await self.reader.readexactly(length) if length else b""
                await self.dispatch(command, arg0, arg1, data)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            for stream in list(self.streams.values()):
                stream.closed_by_host()
            self.writer.close()

    async def dispatch(self, command: int, arg0: int, arg1: int, data: bytes) -> None:
        if command == A_CNXN:
            self.max_payload = min(arg1, MAX_PAYLOAD) if arg1 else MAX_PAYLOAD
            await self.send(A_CNXN, VERSION, MAX_PAYLOAD, self.root.banner)
        elif command == A_OPEN:
            service = data.rstrip(b"\0").decode(errors="replace")
            handler = self.handler_for(service)
            if handler is None:
                await self.send(A_CLSE, 0, arg0)  # refusing an OPEN is a CLSE with local id 0
                return
            stream = Stream(self, self.next_id, arg0)
            self.next_id += 1
            self.streams[stream.local_id] = stream
            await self.send(A_OKAY, stream.local_id, arg0)
            task = asyncio.create_task(self.run_service(handler, stream, service))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif command in (A_OKAY, A_WRTE, A_CLSE):
            stream = self.streams.get(arg1)
            if stream is None:
                return
            if command == A_OKAY:
                stream.acked.set()
            elif command == A_WRTE:
                stream.inbox.feed_data(data)
                await self.send(A_OKAY, stream.local_id, stream.remote_id)
            else:
                self.streams.pop(arg1, None)
                stream.closed_by_host()

    def handler_for(self, service: str) -> Handler | None:
        if service.startswith("shell:"):
            return shell_service
        if service == "sync:":
            return sync_service
        return None

    async def run_service(self, handler: Handler, stream: Stream, service: str) -> None:
        try:
            await handler(stream, service, self.root)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                await stream.close()
            except ConnectionError:
                pass


async def shell_service(stream: Stream, service: str, root: DeviceRoot) -> None:
    argv, env = root.shell(service[len("shell:") :] or "exec sh")
    # Own session, so a host-side CLSE can kill the command with its children.
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=root.root, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None

    def kill() -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    # The host closing the stream (its deadline, a dropped client) ends the command,
    # even one that prints nothing.
    watcher = asyncio.create_task(stream.host_closed.wait())
    watcher.add_done_callback(lambda task: task.cancelled() or kill())
    try:
        while chunk := await proc.stdout.read(stream.conn.max_payload):
            await stream.write(chunk)
        await proc.wait()
    finally:
        watcher.cancel()
        if proc.returncode is None:
            kill()
            await proc.wait()


def _u32(value: float) -> int:
    return int(value) & 0xFFFFFFFF


async def sync_service(stream: Stream, service: str, root: DeviceRoot) -> None:
    while True:
        try:
            request = await stream.inbox.readexactly(8)
        except asyncio.IncompleteReadError:
            return
        kind, length = request[:4], struct.unpack("<I", request[4:])[0]
        if kind == b"QUIT":
            return
        device_path = (await stream.inbox.readexactly(length)).decode(errors="surrogateescape")
        if kind == b"SEND":  # "path,mode"
            name, _, mode = device_path.rpartition(",")
            path = f"{root.host_path(name)},{mode}"
        else:
            path = root.host_path(device_path)
        if kind == b"STAT":
            await stream.write(b"STAT" + _stat_triple(path))
        elif kind == b"LIST":
            await stream.write(_list(path) + b"DONE" + bytes(16))
        elif kind == b"SEND":
            await _receive_file(stream, path)
        elif kind == b"RECV":
            await _send_file(stream, path)
        else:
            await stream.write(_fail(f"unknown sync request {kind!r}"))
            return


def _stat_triple(path: str) -> bytes:
    try:
        st = os.lstat(path)
    except OSError:
        return bytes(12)  # adb's "does not exist": all zeros
    return struct.pack("<III", _u32(st.st_mode), _u32(st.st_size), _u32(st.st_mtime))


def _list(path: str) -> bytes:
    out = bytearray()
    try:
        entries = list(os.scandir(path))
    except OSError:
        return bytes(out)
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        name = os.fsencode(entry.name)
        out += b"DENT" + struct.pack("<IIII", _u32(st.st_mode), _u32(st.st_size), _u32(st.st_mtime), len(name)) + name
    return bytes(out)


def _fail(message: str) -> bytes:
    data = message.encode()
    return b"FAIL" + struct.pack("<I", len(data)) + data


async def _receive_file(stream: Stream, spec: str) -> None:
    path, _, mode_text = spec.rpartition(",")
    error = None
    fh = None
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fh = open(path, "wb")  # noqa: SIM115 - closed below, after the DONE
        os.chmod(path, stat.S_IMODE(int(mode_text or "420")))
    except (OSError, ValueError) as exc:
        error = f"cannot write {path}: {exc}"
    try:
        while True:  # consume DATA until DONE even on error, as the host keeps sending
            kind, length = struct.unpack("<4sI", await stream.inbox.readexactly(8))
            if kind == b"DATA":
                data = await stream.inbox.readexactly(length)
                if fh is not None and error is None:
                    fh.write(data)
            elif kind == b"DONE":
                break
            else:
                error = f"unexpected {kind!r} during SEND"
                break
    finally:
        if fh is not None:
            fh.close()
    if error is None:
        os.utime(path, (length, length))
        await stream.write(b"OKAY" + bytes(4))
    else:
        if fh is not None:
            os.unlink(path)
        await stream.write(_fail(error))


async def _send_file(stream: Stream, path: str) -> None:
    try:
        fh = open(path, "rb")  # noqa: SIM115
    except OSError as exc:
        await stream.write(_fail(f"cannot read {path}: {exc.strerror}"))
        return
    with fh:
        out = bytearray()
        while chunk := fh.read(SYNC_DATA_MAX):
            out += b"DATA" + struct.pack("<I", len(chunk)) + chunk
            if len(out) >= stream.conn.max_payload:
                await stream.write(bytes(out))
                out.clear()
        await stream.write(bytes(out) + b"DONE" + bytes(4))


async def main(port: int, root: Path, chroot: bool = False, binfmt: str | None = None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    device = DeviceRoot(root, chroot)
    if chroot:
        device.mount()
    if binfmt:
        register_binfmt(binfmt, root.with_name(root.name + ".binfmt"))

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await Connection(reader, writer, device).serve()

    server = await asyncio.start_server(on_connect, "127.0.0.1", port)
    bound = server.sockets[0].getsockname()[1]
    print(f"PORT {bound}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the device's folder: shell cwd")
    parser.add_argument("--port", type=int, default=0, help="TCP port (0: pick a free one)")
    parser.add_argument("--chroot", action="store_true", help="DIR is the device's / (an emulated Android phone)")
    parser.add_argument("--binfmt", metavar="QEMU", help="register QEMU for aarch64 programs (own user namespace only)")
    args = parser.parse_args()
    try:
        asyncio.run(main(args.port, args.root, args.chroot, args.binfmt))
    except KeyboardInterrupt:
        sys.exit(0)
