"""The catalogue as the binary states it (`event-audit catalogue list --format json`): every event
version with its fields (extends and field sets expanded), every shape with its own, each field's
name, type (as catalogue/ writes it: `string`, `[T]`, a shape's name, ...) and requiredness.

The fuzz tools read it from here rather than from catalogue/'s TOML, so that they see what the
build made of it (the one reader of those files is build/). The binary is `$EVENT_AUDIT_BIN`
when set (the stable suite sets it to the binary it built), else `cargo run --quiet`.
"""
import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parent.parent
ARGS = ["catalogue", "list", "--format", "json"]


def load() -> dict:
    """`{"fingerprint", "events": [{"name", "fields": [...], ...}], "shapes": [...]}`."""
    binary = os.environ.get("EVENT_AUDIT_BIN")
    cmd = [binary] if binary else ["cargo", "run", "--quiet", "--bin", "event-audit", "--"]
    out = subprocess.run(cmd + ARGS, cwd=ROOT, check=True, stdout=subprocess.PIPE)
    return json.loads(out.stdout)
