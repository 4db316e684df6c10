#!/usr/bin/env python3
"""The poison load of scripts/bench-ingest.sh: N messages no decoder can take as a catalogue event.

Reads the stream's first N messages (the realistic mix just published) and publishes each again,
spoiled in one of three ways, in turn: cut in half (not JSON: malformed), its event type renamed
(`poison.` before it: an unknown type), or led by bytes that are not UTF-8 (malformed). The
payloads stay the mix's sizes, so the load differs from the mix in its verdicts only.

Usage: bench_poison.py NATS_URL STREAM FROM_SUBJECT TO_SUBJECT N
"""
import asyncio
import sys

import nats
from nats.errors import TimeoutError as NatsTimeout

BATCH = 1000


def spoil(i, data):
    if i % 3 == 0:
        return data[: len(data) // 2]
    if i % 3 == 1:
        for key in (b'"type":"', b'"detail-type":"', b'"event_type":"', b'"type": "'):
            if key in data:
                return data.replace(key, key + b"poison.", 1)
        return b"\xff" + data
    return b"\xff\xfe" + data


async def main(url, stream, source, subject, n):
    nc = await nats.connect(url)
    js = nc.jetstream()
    sub = await js.pull_subscribe(source, stream=stream)
    sent, window = 0, []
    while sent < n:
        try:
            msgs = await sub.fetch(min(BATCH, n - sent), timeout=5)
        except NatsTimeout:
            break
        for m in msgs:
            window.append(js.publish(subject, spoil(sent, m.data), stream=stream))
            sent += 1
            await m.ack()
        await asyncio.gather(*window)
        window.clear()
    await sub.unsubscribe()
    await nc.close()
    print(f"published {sent} poison messages")


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])))
