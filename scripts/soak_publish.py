#!/usr/bin/env python3
"""The steady publish load of scripts/soak.sh, with nats-py (installed by soak.sh when missing).

Publishes to SUBJECT at RATE messages a second (message i is due i/RATE seconds after the start)
for SECONDS, or until SIGTERM, with at most WINDOW publishes awaiting their JetStream ack. Every
message is a catalogue event from TEMPLATES (JSON Lines; tests/corpus/valid.jsonl) with its
envelope id replaced by a unique `<TAG>-<n>`, and carries `Nats-Msg-Id: <TAG>-<n>`: a publish
whose ack did not come (a NATS node killed, a leader election) is sent again with the same id
until acked, for at most RETRY_FOR seconds (within JetStream's two-minute duplicate window, so
a retry of a message that was stored is acked as a duplicate with the sequence it got, never
stored twice). A message still unacked then is given up and counted.

Writes to OUT_DIR: `acked.txt` (the stream sequence of every acked message, one a line, sorted),
`summary.json` (counts: published, acked, acked as duplicate, given up, retries, the last acked
sequence, the rate achieved) and, every 10 s, `progress.json`.

Usage: soak_publish.py URLS STREAM SUBJECT RATE SECONDS OUT_DIR TEMPLATES TAG
       (env WINDOW=512, RETRY_FOR=100, ATTEMPT_TIMEOUT=5)
"""
import asyncio
import json
import os
import signal
import sys
import time

import nats

URLS, STREAM, SUBJECT = sys.argv[1], sys.argv[2], sys.argv[3]
RATE, SECONDS, OUT, TEMPLATES, TAG = (
    float(sys.argv[4]),
    float(sys.argv[5]),
    sys.argv[6],
    sys.argv[7],
    sys.argv[8],
)
WINDOW = int(os.environ.get("WINDOW", "512"))
RETRY_FOR = float(os.environ.get("RETRY_FOR", "100"))
ATTEMPT_TIMEOUT = float(os.environ.get("ATTEMPT_TIMEOUT", "5"))


def templates() -> list[str]:
    out = []
    for line in open(TEMPLATES):
        line = line.strip()
        if not line:
            continue
        doc = json.loads(line)
        doc["id"] = "@@ID@@"
        out.append(json.dumps(doc, separators=(",", ":")))
    return out


class Stats:
    def __init__(self):
        self.published = 0  # messages sent at least once
        self.acked = 0
        self.acked_duplicate = 0  # acks that said "duplicate" (a retry of a stored message)
        self.given_up = 0
        self.retries = 0
        self.errors: dict[str, int] = {}
        self.seqs: list[int] = []
        self.inflight = 0
        self.max_lag = 0.0  # how far the schedule fell behind (window full)


def log(msg: str) -> None:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
    print(f"{stamp}Z soak-publish: {msg}", file=sys.stderr, flush=True)


async def publish_one(js, st: Stats, sem: asyncio.Semaphore, msg_id: str, payload: bytes):
    deadline = time.monotonic() + RETRY_FOR
    try:
        while True:
            try:
                ack = await js.publish(
                    SUBJECT, payload, timeout=ATTEMPT_TIMEOUT, headers={"Nats-Msg-Id": msg_id}
                )
                st.acked += 1
                if ack.duplicate:
                    st.acked_duplicate += 1
                st.seqs.append(ack.seq)
                return
            except Exception as e:  # timeout, no responders during an election, disconnected
                kind = type(e).__name__
                st.errors[kind] = st.errors.get(kind, 0) + 1
                if time.monotonic() >= deadline:
                    st.given_up += 1
                    log(f"gave up on {msg_id} after {RETRY_FOR:g} s: {kind}")
                    return
                st.retries += 1
                await asyncio.sleep(0.25)
    finally:
        st.inflight -= 1
        sem.release()


def write_json(name: str, st: Stats, started: float, final: bool) -> None:
    elapsed = time.monotonic() - started
    doc = {
        "published": st.published,
        "acked": st.acked,
        "acked_duplicate": st.acked_duplicate,
        "given_up": st.given_up,
        "retries": st.retries,
        "errors": st.errors,
        "inflight": st.inflight,
        "last_acked_seq": max(st.seqs) if st.seqs else 0,
        "seconds": round(elapsed, 1),
        "rate": round(st.published / elapsed, 1) if elapsed else 0,
        "max_schedule_lag_secs": round(st.max_lag, 2),
        "final": final,
    }
    tmp = os.path.join(OUT, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, os.path.join(OUT, name))


async def main() -> int:
    tpl = templates()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)

    async def on_event(kind, detail=""):
        log(f"{kind} {detail}")

    async def disconnected():
        await on_event("disconnected")

    async def reconnected():
        await on_event("reconnected", nc.connected_url.netloc if nc.connected_url else "")

    async def error(e):
        await on_event("error", repr(e))

    nc = await nats.connect(
        servers=URLS.split(","),
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.2,
        connect_timeout=5,
        disconnected_cb=disconnected,
        reconnected_cb=reconnected,
        error_cb=error,
        pending_size=8 * 1024 * 1024,
    )
    js = nc.jetstream()
    st = Stats()
    sem = asyncio.Semaphore(WINDOW)
    tasks: set[asyncio.Task] = set()
    started = time.monotonic()
    next_report = started + 10
    i = 0
    log(f"publishing {RATE:g}/s for {SECONDS:g} s to {SUBJECT} (stream {STREAM}), window {WINDOW}")
    while not stop.is_set():
        now = time.monotonic()
        if now - started >= SECONDS:
            break
        due_count = int((now - started) * RATE) + 1
        if i < due_count:
            st.max_lag = max(st.max_lag, (due_count - 1 - i) / RATE)
        while i < due_count and not stop.is_set():
            await sem.acquire()
            msg_id = f"{TAG}-{i}"
            payload = tpl[i % len(tpl)].replace("@@ID@@", msg_id).encode()
            st.published += 1
            st.inflight += 1
            t = loop.create_task(publish_one(js, st, sem, msg_id, payload))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
            i += 1
        if time.monotonic() >= next_report:
            write_json("progress.json", st, started, False)
            next_report += 10
        try:
            await asyncio.wait_for(stop.wait(), 0.01)
        except asyncio.TimeoutError:
            pass
    log(f"stopping: {st.published} published, waiting for {len(tasks)} ack(s)")
    if tasks:
        await asyncio.gather(*tasks)
    await nc.drain()
    with open(os.path.join(OUT, "acked.txt"), "w") as f:
        for s in sorted(st.seqs):
            f.write(f"{s}\n")
    write_json("summary.json", st, started, True)
    log(
        f"done: published {st.published}, acked {st.acked} ({st.acked_duplicate} as duplicate), "
        f"given up {st.given_up}, retries {st.retries}, errors {st.errors}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
