#!/usr/bin/env python3
"""A TCP proxy for scripts/soak.sh that can stall: 127.0.0.1:LISTEN -> 127.0.0.1:UPSTREAM.

On SIGUSR1 it stalls every connection open at that moment for the number of seconds written in
the control file (its first line; 10 when the file is missing or unreadable), then resumes them:
while stalled, no byte is read from or written to either side and no FIN or RST is sent, so the
client sees a silent peer (the harness's `Stall` mode, tests/faults/harness/proxy.rs). Connections
accepted during a stall are forwarded at once. Bytes already read when the stall begins are held
and forwarded when it ends. Each stall is logged on stderr with its start, end and the number of
connections it held.

Usage: soak_proxy.py LISTEN_PORT UPSTREAM_PORT CONTROL_FILE   (Python 3.11 stdlib only)
"""
import asyncio
import itertools
import signal
import sys
import time

LISTEN, UPSTREAM, CONTROL = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

ids = itertools.count()
stall_below = 0  # connections with an id below this are silent while `resumed` is clear
resumed = asyncio.Event()
open_ids: set[int] = set()


def log(msg: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    print(f"{stamp}Z soak-proxy: {msg}", file=sys.stderr, flush=True)


async def gate(cid: int) -> None:
    while cid < stall_below and not resumed.is_set():
        await resumed.wait()


async def pump(cid: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            await gate(cid)
            data = await reader.read(64 * 1024)
            if not data:
                break
            await gate(cid)  # a chunk read just before the stall is held until it ends
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


async def handle(creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
    cid = next(ids)
    open_ids.add(cid)
    try:
        sreader, swriter = await asyncio.open_connection("127.0.0.1", UPSTREAM)
    except OSError:
        cwriter.close()
        open_ids.discard(cid)
        return
    try:
        await asyncio.gather(pump(cid, creader, swriter), pump(cid, sreader, cwriter))
    finally:
        open_ids.discard(cid)


async def stall() -> None:
    global stall_below
    try:
        secs = float(open(CONTROL).read().split()[0])
    except (OSError, ValueError, IndexError):
        secs = 10.0
    if not resumed.is_set():
        log("stall requested while one is under way: ignored")
        return
    held = len(open_ids)
    stall_below = next(ids)  # every connection open now (ids are taken in order)
    resumed.clear()
    log(f"stall begins: {held} open connection(s) silent for {secs:g} s")
    await asyncio.sleep(secs)
    resumed.set()
    log(f"stall ends: resumed {len([i for i in open_ids if i < stall_below])} connection(s)")


async def main() -> None:
    resumed.set()
    loop = asyncio.get_running_loop()
    tasks: set[asyncio.Task] = set()

    def on_usr1() -> None:
        t = loop.create_task(stall())
        tasks.add(t)
        t.add_done_callback(tasks.discard)

    loop.add_signal_handler(signal.SIGUSR1, on_usr1)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN, reuse_address=True)
    log(f"listening on 127.0.0.1:{LISTEN}, forwarding to 127.0.0.1:{UPSTREAM}")
    async with server:
        await stop.wait()
    log("stopped")


if __name__ == "__main__":
    asyncio.run(main())
