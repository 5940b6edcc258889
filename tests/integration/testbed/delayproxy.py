"""A TCP proxy on loopback that delays every byte by a fixed time each way: a slow link.

This kernel has no `netem`, so a board behind a 20 ms round trip (Wi-Fi, a remote lab) is
simulated in user space: each chunk read from one side is written to the other `one_way_s`
later, in order. Bandwidth is not limited; only latency is added.

    with DelayProxy(target_port=sshd.port, one_way_s=0.010) as proxy:
        spec = sshd.spec(...port=proxy.port)
"""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType
from typing import Self

READ_BYTES = 1 << 16


class DelayProxy:
    def __init__(self, target_port: int, one_way_s: float, target_host: str = "127.0.0.1", drop_first: int = 0) -> None:
        """`drop_first`: close that many first connections at once (a flaky link: connection reset)."""
        self.target = (target_host, target_port)
        self.drop_first = drop_first
        self.one_way_s = one_way_s
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="delay-proxy", daemon=True)
        self._server: asyncio.base_events.Server | None = None

    def start(self) -> Self:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self._loop).result(timeout=10)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    def stop(self) -> None:
        """Close the listener and every forwarded connection, then the proxy's thread."""
        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        self._loop.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        if self.drop_first > 0:
            self.drop_first -= 1
            client_w.close()
            return
        try:
            server_r, server_w = await asyncio.open_connection(*self.target)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(self._pipe(client_r, server_w), self._pipe(server_r, client_w), return_exceptions=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    writer.close()
                    return
                writer.write(data)
                await writer.drain()

        sender = asyncio.create_task(deliver())
        try:
            while True:
                data = await reader.read(READ_BYTES)
                await queue.put((loop.time() + self.one_way_s, data))
                if not data:
                    break
        except OSError:
            await queue.put((loop.time(), b""))
        await sender
