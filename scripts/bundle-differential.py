#!/usr/bin/env python3
"""Both bundle verifiers on random bundles: `event-audit verify-proof` and tools/verify_bundle.py
must give the same exit code on each.

Usage: scripts/bundle-differential.py [N [SEED]]   (default 500 bundles, seed 1; build first:
cargo build). Each bundle proves one leaf of a one-leaf tree, signed with a fixed test key; the
leaf is a version 1 or 2 row encoding (README, "Checking an evidence bundle") built here, then
the bundle is varied: genuine, bytes of the leaf changed, inserted or removed, a column given
another value or left out (or `columns` itself), a time written otherwise, the sequence number
written otherwise, another leaf index, characters of the JSON text changed. Prints each disagreement; exit 1 if there is one.
"""
import base64, contextlib, hashlib, io, json, os, random, re, subprocess, sys, tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import verify_bundle as vb  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat  # noqa: E402

BIN = os.environ.get("EVENT_AUDIT_BIN", os.path.join(ROOT, "target", "debug", "event-audit"))
NAME = "log.example/differential"
SK = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PK = SK.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
KID = hashlib.sha256(NAME.encode() + b"\n\x01" + PK).digest()[:4]
VALUES = ["null", "true", "1", "1.0", "-0", "1e0", '"x"', '"A-1"', "[]", "{}", '"decoded"',
          '"invalid"', "123456789012345678901234567890", '"1970-01-01T00:00:00Z"', "[0, 1]",
          '{"H":["v"]}', '{"a":1.0}', '"\\u00e9"', "5", "0", '"1970-01-01T00:00:00.000000000Z"']
PAYLOADS = ['{"a":1}', '{"b":[1,2.50,{"c":null}],"big":123456789012345678901234567890}',
            '{"x":"\\u00e9","y":-0.0e-3}', "[1e400]"]


def b64(b):
    return base64.b64encode(b).decode()


def field(b):
    return b"\xff" * 8 if b is None else len(b).to_bytes(8, "big") + b


def i64(v):
    return v.to_bytes(8, "big", signed=True)


def text(s):
    return None if s is None else s.encode()


def encode(v2, f):
    """The row encoding of fields `f` (version 2, else 1)."""
    out = b"event-audit row v%d\0" % (2 if v2 else 1) + field(f["stream"].encode())
    ints = [i64(f["stream_seq"]), i64(f["published_at"]), i64(f["received_at"])]
    if v2:
        out += b"".join(map(field, ints)) + field(f["subject"].encode()) + field(i64(f["delivery_count"]))
    else:
        out += b"".join(ints) + field(f["subject"].encode()) + f["delivery_count"].to_bytes(4, "big", signed=True)
    out += b"".join(field(text(f[k])) for k in vb.TEXTS)
    if v2:
        place = f["payload_place"]
        out += field(None if f["occurred_at"] is None else i64(f["occurred_at"]))
        out += field(place and place[0].to_bytes(8, "big") + place[1].to_bytes(8, "big"))
        out += field(text(f["payload_error"])) + field(f["catalogue"].encode())
    else:
        out += b"\0" if f["occurred_at"] is None else b"\1" + i64(f["occurred_at"])
    return out + field(f["raw"])


def sample(r):
    payload = r.choice(PAYLOADS)
    raw = ('{"event":"e-v1","payload":' + payload + "}").encode()
    start = raw.index(payload.encode())
    return {"stream": "S", "stream_seq": r.randint(0, 10**12), "published_at": r.randint(0, 2 * 10**17),
            "received_at": r.randint(0, 2 * 10**17), "subject": "S.x", "delivery_count": r.randint(0, 5),
            "headers": r.choice([None, '{"H":["v"]}']), "envelope": "native",
            "event_id": r.choice([None, "id"]), "event_type": "e", "event_version": "v1",
            "status": r.choice(["decoded", "invalid"]),
            "errors": r.choice([None, '[{"path":"a","code":"x","message":"m"}]']),
            "unknown_fields": r.choice([None, '["b"]']), "account_number": r.choice([None, "A-1"]),
            "occurred_at": r.choice([None, r.randint(0, 2 * 10**17)]),
            "payload_place": (start, start + len(payload)), "payload_error": None,
            "catalogue": "0123456789abcdef", "raw": raw}, payload


def columns(v2, f, payload):
    """The columns as the README says prove writes them (JSON text, payload verbatim)."""
    time = lambda us: None if us is None else vb.time_text(us)[1:-1]
    parts = []
    for k in vb.COLUMNS[2:]:
        if k in vb.V2_ONLY and not v2:
            continue
        v = f.get(k)
        if k in vb.TIMES:
            v = json.dumps(time(v))
        elif k in ("headers", "errors", "unknown_fields"):
            v = "null" if v is None else v
        elif k == "payload_place":
            v = json.dumps(list(v))
        elif k == "payload":
            v = payload
        else:
            v = json.dumps(v)
        parts.append(f'"{k}": {v}')
    return "{" + ", ".join(parts) + "}"


def bundle(data, raw, cols, seq, index="0"):
    root = vb.sha256(b"\0", vb.sha256(data))
    body = f"{NAME}\n1\n{b64(root)}\n"
    note = body + "\n" + f"\u2014 {NAME} {b64(KID + SK.sign(body.encode()))}\n"
    shown = "" if cols is None else f'"columns": {cols}, '
    entry = (f'{{"stream": "S", "stream_seq": {seq}, "leaf_index": {index}, "raw": "{b64(raw)}", '
             f'{shown}"leaf_data": "{b64(data)}", "row_hash": "{vb.sha256(data).hex()}", '
             '"inclusion_proof": []}')
    return f'{{"format": "event-audit-bundle/2", "checkpoint": {json.dumps(note)}, "entries": [{entry}]}}'


def verdicts(path, key):
    rust = subprocess.run([BIN, "verify-proof", path, "--public-key", key], capture_output=True, text=True)
    sys.argv = ["verify_bundle.py", path, "--public-key", key]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        python = vb.main()
    return (rust.returncode, rust.stderr.strip()), (python, err.getvalue().strip())


def vary(r, kind, v2, f, payload):
    data, cols, seq, index = encode(v2, f), columns(v2, f, payload), str(f["stream_seq"]), "0"
    if kind == "leaf bytes":
        d = bytearray(data)
        for _ in range(r.randint(1, 3)):
            at, op = r.randrange(len(d)), r.random()
            if op < 0.5:
                d[at] = r.randrange(256)
            elif op < 0.75:
                d.insert(at, r.randrange(256))
            else:
                del d[at]
        data = bytes(d)
    elif kind == "column":
        key = r.choice(vb.COLUMNS + ("other",))
        m = re.search(f'"{key}": ', cols)
        if m:
            end = json.JSONDecoder().raw_decode(cols, m.end())[1]
            cols = cols[: m.end()] + r.choice(VALUES) + cols[end:]
        else:
            cols = cols[:-1] + f', "{key}": {r.choice(VALUES)}}}'
    elif kind == "no column":
        key = r.choice(vb.COLUMNS)
        m = re.search(f'(, )?"{key}": ', cols)
        if m:
            end = json.JSONDecoder().raw_decode(cols, m.end())[1]
            cols = (cols[: m.start()] + cols[end:]).replace("{, ", "{", 1)
        elif r.random() < 0.3:
            cols = None
    elif kind == "time":
        t = vb.time_text(f["published_at"])[1:-1]
        other = r.choice([t[:19] + "Z", t[:-1] + "000Z", t[:-1] + "001Z", t.replace("T", "t"),
                          t[:-1] + "+00:00", t[:19] + ".5Z", t[:23] + "Z"])
        cols = cols.replace(f'"{t}"', f'"{other}"', 1)
    elif kind == "sequence":
        seq = r.choice([seq + ".0", seq + "e0", f'"{seq}"', "-0", "-" + seq])
    elif kind == "leaf index":
        index = r.choice(["-0", "0.0", "1", "-1", "true", '"0"', "18446744073709551616", "null"])
    text = bundle(data, f["raw"], cols, seq, index)
    if kind == "json text":
        at = r.randrange(len(text))
        edit = r.choice(['"', ",", "}", "\\ud800", "NaN", " ", "\\u0000", "1", '{"a":1,"a":2}', "[[["])
        text = text[:at] + edit + text[at + r.randint(0, 2) :]
    return text


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    r = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    tmp = tempfile.mkdtemp()
    key, path = os.path.join(tmp, "log.pub"), os.path.join(tmp, "bundle.json")
    with open(key, "w") as k:
        k.write(f"{NAME}+{KID.hex()}+{b64(bytes([1]) + PK)}\n")
    kinds = ["genuine", "leaf bytes", "column", "no column", "time", "sequence", "leaf index",
             "json text"]
    seen, differ = {}, 0
    for _ in range(n):
        kind, v2 = r.choice(kinds), r.random() < 0.8
        f, payload = sample(r)
        with open(path, "w", encoding="utf-8") as out:
            out.write(vary(r, kind, v2, f, payload))
        rust, python = verdicts(path, key)
        seen[(kind, rust[0])] = seen.get((kind, rust[0]), 0) + 1
        if rust[0] != python[0]:
            differ += 1
            print(f"DIFFERENT ({kind}): verify-proof {rust}, verify_bundle.py {python}")
    print(f"{n} bundles, {differ} disagreements; by variation and exit code:")
    for (kind, code), count in sorted(seen.items()):
        print(f"  {kind:<11} exit {code}: {count}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
