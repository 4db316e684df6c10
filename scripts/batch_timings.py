#!/usr/bin/env python3
"""Sums the sink's per-batch trace (the "batch timings" lines that `--log-json` writes with
RUST_LOG=event_audit::ingest::sink=trace) from a log file. Prints one line: the daemon's
"stopped" figures (messages, busy seconds: a batch in hand, events per busy second; '- - -' when the log has none), then the
milliseconds of each step summed over the batches, rounded: ids copy observe link_commit.

Usage: batch_timings.py LOG
"""
import json
import sys

STEPS = ("ids_ms", "copy_ms", "observe_ms", "link_commit_ms")
sums = dict.fromkeys(STEPS, 0.0)
run = ("-", "-", "-")
for line in open(sys.argv[1]):
    try:
        f = json.loads(line).get("fields", {})
    except ValueError:
        continue
    if f.get("message") == "batch timings":
        for k in STEPS:
            sums[k] += f[k]
    if f.get("message") == "stopped":
        run = (f["messages"], round(f["busy_secs"], 3), int(f["per_busy_sec"]))
print(*run, *(round(sums[k]) for k in STEPS))
