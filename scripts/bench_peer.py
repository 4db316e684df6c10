#!/usr/bin/env python3
"""The peer of scripts/bench-ingest.sh: what a team would write instead of event-audit.

A batched JetStream consumer (nats-py, pull batches of 500), each message decoded with
json.loads, the batch written with one binary COPY (asyncpg) in one transaction, then every
message acked. No verdicts, no envelope ids, no hash chain. Prints "peer <messages> <seconds>
<events/s>", timed from the first fetched message to the last ack.

Usage: bench_peer.py NATS_URL STREAM CONSUMER DATABASE_URL N
"""
import asyncio
import datetime
import json
import sys
import time

import asyncpg
import nats
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig

BATCH = 500

TABLE = """
CREATE TABLE IF NOT EXISTS peer_events (
    stream      text        NOT NULL,
    stream_seq  bigint      NOT NULL,
    subject     text        NOT NULL,
    received_at timestamptz NOT NULL,
    event       text,
    payload     jsonb,
    raw         bytea       NOT NULL,
    PRIMARY KEY (stream, stream_seq)
)
"""


def event_and_payload(data):
    """The event name and payload of a CloudEvents, EventBridge or native envelope."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None, None
    if not isinstance(doc, dict):
        return None, None
    for name_key, payload_key in (("type", "data"), ("detail-type", "detail"), ("event", "payload")):
        if name_key in doc:
            payload = doc.get(payload_key)
            return str(doc[name_key]), json.dumps(payload) if payload is not None else None
    return None, json.dumps(doc)


async def main(nats_url, stream, consumer, db_url, n):
    nc = await nats.connect(nats_url)
    js = nc.jetstream()
    await js.add_consumer(
        stream,
        config=ConsumerConfig(durable_name=consumer, ack_policy=AckPolicy.EXPLICIT, max_ack_pending=20000),
    )
    sub = await js.pull_subscribe_bind(durable=consumer, stream=stream)
    conn = await asyncpg.connect(db_url)
    await conn.execute(TABLE)
    done, first, last = 0, None, None
    while done < n:
        try:
            msgs = await sub.fetch(BATCH, timeout=5)
        except NatsTimeout:
            break
        if first is None:
            first = time.perf_counter()
        now = datetime.datetime.now(datetime.timezone.utc)
        rows = []
        for m in msgs:
            event, payload = event_and_payload(m.data)
            rows.append((m.metadata.stream, m.metadata.sequence.stream, m.subject, now, event, payload, m.data))
        async with conn.transaction():
            await conn.copy_records_to_table(
                "peer_events",
                records=rows,
                columns=["stream", "stream_seq", "subject", "received_at", "event", "payload", "raw"],
            )
        for m in msgs:
            await m.ack()
        done += len(msgs)
        last = time.perf_counter()
    await nc.flush()
    secs = (last - first) if first is not None else 0.0
    print(f"peer {done} {secs:.3f} {int(done / secs) if secs else 0}")
    await conn.close()
    await nc.close()


if __name__ == "__main__":
    url, stream, consumer, db, count = sys.argv[1:6]
    asyncio.run(main(url, stream, consumer, db, int(count)))
