#!/usr/bin/env python3
"""JetStream chores for scripts/soak.sh and scripts/dr-drill.sh, with nats-py (installed by
either when missing).

  soak_js.py URLS create-streams STREAM SUBJECTS CHECKPOINT_STREAM CHECKPOINT_SUBJECT REPLICAS
      The audit stream (file storage, the subjects the daemon would give it) and the checkpoint
      stream (file storage, deny_delete, deny_purge, no limit: what the daemon itself creates,
      src/witnessed/signer/publish.rs), both with REPLICAS replicas, created here so that the soak
      also runs builds older than `run --stream-replicas` and `--checkpoint-replicas`.
  soak_js.py URLS stream-info STREAM
      One line: `messages first_seq last_seq replicas current_replicas`.
  soak_js.py URLS consumer-info STREAM CONSUMER
      One line: `num_pending num_ack_pending num_redelivered delivered_stream_seq ack_floor_stream_seq`.
  soak_js.py URLS wait-drained STREAM CONSUMER TIMEOUT_SECS
      Waits until the consumer has nothing pending nor awaiting an ack; exit 1 on timeout.
  soak_js.py URLS wait-healthy REPLICAS TIMEOUT_SECS STREAM...
      Waits until every STREAM has a leader and REPLICAS current replicas; exit 1 on timeout.

  soak_js.py URLS purge-below STREAM SEQ
      Purges every message below SEQ (a stream past its retention).
  soak_js.py URLS recreate STREAM SUBJECT
      Deletes the stream and creates it again under its name (its sequences start at 1 again).

URLS is a comma-separated list of nats:// URLs.
"""
import asyncio
import sys
import time

import nats
from nats.js.api import StorageType, StreamConfig


async def connect(urls: str):
    return await nats.connect(
        servers=urls.split(","),
        connect_timeout=5,
        max_reconnect_attempts=-1,
        reconnect_time_wait=0.5,
    )


async def create_streams(js, stream, subjects, ck_stream, ck_subject, replicas):
    replicas = int(replicas)
    await js.add_stream(
        StreamConfig(
            name=stream,
            subjects=subjects.split(","),
            storage=StorageType.FILE,
            num_replicas=replicas,
        )
    )
    await js.add_stream(
        StreamConfig(
            name=ck_stream,
            subjects=[ck_subject],
            storage=StorageType.FILE,
            num_replicas=replicas,
            deny_delete=True,
            deny_purge=True,
        )
    )
    for name in (stream, ck_stream):
        info = await js.stream_info(name)
        print(f"{name}: replicas={info.config.num_replicas} subjects={info.config.subjects}")


def current_replicas(info) -> int:
    n = 1 if info.cluster and info.cluster.leader else 0
    for r in (info.cluster.replicas or []) if info.cluster else []:
        if r.current and not r.offline:
            n += 1
    return n


async def stream_info(js, stream):
    info = await js.stream_info(stream)
    s = info.state
    print(s.messages, s.first_seq, s.last_seq, info.config.num_replicas, current_replicas(info))


async def consumer_info(js, stream, consumer):
    c = await js.consumer_info(stream, consumer)
    print(
        c.num_pending,
        c.num_ack_pending,
        c.num_redelivered,
        c.delivered.stream_seq,
        c.ack_floor.stream_seq,
    )


async def wait_drained(js, stream, consumer, timeout):
    deadline = time.monotonic() + float(timeout)
    last = None
    while time.monotonic() < deadline:
        try:
            c = await asyncio.wait_for(js.consumer_info(stream, consumer), 5)
            last = (c.num_pending, c.num_ack_pending)
            if last == (0, 0):
                print("drained")
                return 0
        except Exception as e:  # a leader election: ask again
            last = repr(e)
        await asyncio.sleep(1)
    print(f"not drained after {timeout} s: {last}")
    return 1


async def wait_healthy(js, replicas, timeout, *streams):
    deadline = time.monotonic() + float(timeout)
    pending = list(streams)
    while time.monotonic() < deadline:
        left = []
        for s in pending:
            try:
                info = await asyncio.wait_for(js.stream_info(s), 5)
                if current_replicas(info) < int(replicas):
                    left.append(s)
            except Exception:
                left.append(s)
        if not left:
            return 0
        pending = left
        await asyncio.sleep(0.5)
    print(f"not healthy after {timeout} s: {' '.join(pending)}")
    return 1


async def purge_below(js, stream, seq):
    await js.purge_stream(stream, seq=int(seq))


async def recreate(js, stream, subject):
    await js.delete_stream(stream)
    await js.add_stream(StreamConfig(name=stream, subjects=[subject], storage=StorageType.FILE))


async def main(argv):
    urls, cmd, args = argv[1], argv[2], argv[3:]
    nc = await connect(urls)
    js = nc.jetstream(timeout=10)
    try:
        fn = {
            "create-streams": create_streams,
            "stream-info": stream_info,
            "consumer-info": consumer_info,
            "wait-drained": wait_drained,
            "wait-healthy": wait_healthy,
            "purge-below": purge_below,
            "recreate": recreate,
        }[cmd]
        return await fn(js, *args) or 0
    finally:
        await nc.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv)))
