#!/usr/bin/env python3
"""Checks an event-audit evidence bundle offline, independently of event-audit itself.

Usage: verify_bundle.py BUNDLE.json --public-key KEY.pub
Needs Python 3.8+ and `cryptography` (Ed25519). Exit 0: every entry is proven against the signed
checkpoint; 1: rejected (the line says what failed); 2: unusable input.

What is checked (README, "Evidence bundles"): the checkpoint is a C2SP signed note whose signature
line for the public key's name and key id verifies with Ed25519; its body is
"<origin>\\n<tree size>\\n<base64 root>\\n". Per entry: SHA-256(leaf_data) == row_hash; `raw` is the
last field of leaf_data (u64 big-endian length, then the bytes); the RFC 9162 inclusion proof of
leaf SHA-256(0x00 || row_hash) at leaf_index leads to the root for the tree size.
"""
import argparse, base64, hashlib, json, sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


class Rejected(Exception):
    pass


def sha256(*parts):
    return hashlib.sha256(b"".join(parts)).digest()


def b64(text, what):
    try:
        return base64.b64decode(text, validate=True)
    except (ValueError, TypeError):
        raise Rejected(f"{what}: not base64")


def read_key(line):
    name, key_id, key = line.strip().split("+", 2)  # base64 may hold "+"
    key = base64.b64decode(key)
    if len(key) != 33 or key[0] != 1:
        raise ValueError("not an Ed25519 public key (0x01 || 32 bytes)")
    if sha256(name.encode(), b"\n", key)[:4].hex() != key_id.lower():
        raise ValueError("its key id does not match its name and key")
    return name, bytes.fromhex(key_id), Ed25519PublicKey.from_public_bytes(key[1:])


def check_note(note, key):
    name, key_id, public = key
    cut = note.rfind("\n\n")
    if cut < 0 or not note.endswith("\n"):
        raise Rejected("checkpoint: not a signed note (no blank line before the signatures)")
    body, sigs = note[: cut + 1], note[cut + 2 :].splitlines()
    mine = [s for s in sigs if s.startswith(f"\u2014 {name} ")]
    if not mine:
        raise Rejected(f"checkpoint signature: no signature line for key {name}")
    for line in mine:
        sig = b64(line.rsplit(" ", 1)[1], "checkpoint signature")
        if len(sig) == 68 and sig[:4] == key_id:
            try:
                public.verify(sig[4:], body.encode())
                break
            except InvalidSignature:
                pass
    else:
        raise Rejected("checkpoint signature does not verify with the public key "
                       "(origin, tree size or root changed, or another key)")
    lines = body.split("\n")
    if len(lines) < 4 or not lines[1].isdigit():
        raise Rejected("checkpoint tree size: not a number")
    root = b64(lines[2], "checkpoint root")
    if len(root) != 32:
        raise Rejected("checkpoint root: not 32 bytes")
    return lines[0], int(lines[1]), root


def inclusion_root(index, size, leaf, proof):
    """RFC 9162, 2.1.3.2: the root an inclusion proof leads to (None when it cannot)."""
    if index >= size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = sha256(b"\x01", p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = sha256(b"\x01", r, p)
        fn, sn = fn >> 1, sn >> 1
    return r if sn == 0 else None


def check_entry(i, e, size, root):
    where = f"entry {i} (stream {e.get('stream')} seq {e.get('stream_seq')})"
    leaf_data, raw = b64(e["leaf_data"], f"{where} leaf data"), b64(e["raw"], f"{where} raw")
    if sha256(leaf_data).hex() != e["row_hash"].lower():
        raise Rejected(f"{where}: row hash is not SHA-256 of the leaf data")
    n = len(raw)
    if len(leaf_data) < n + 8 or leaf_data[len(leaf_data) - n - 8 :] != n.to_bytes(8, "big") + raw:
        raise Rejected(f"{where}: raw bytes are not the raw field of the leaf data")
    proof = [b64(p, f"{where} proof hash") for p in e["inclusion_proof"]]
    if any(len(p) != 32 for p in proof):
        raise Rejected(f"{where}: proof hash not 32 bytes")
    leaf = sha256(b"\x00", bytes.fromhex(e["row_hash"]))
    if inclusion_root(e["leaf_index"], size, leaf, proof) != root:
        raise Rejected(f"{where}: inclusion proof does not lead to the checkpoint's root "
                       f"(leaf index {e['leaf_index']}, tree size {size})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle")
    ap.add_argument("--public-key", required=True)
    a = ap.parse_args()
    try:
        with open(a.public_key) as f:
            key = read_key(f.readline())
        with open(a.bundle) as f:
            bundle = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read the input: {e}", file=sys.stderr)
        return 2
    try:
        if bundle.get("format") != "event-audit-bundle/1":
            raise Rejected(f"format {bundle.get('format')!r} is not event-audit-bundle/1")
        origin, size, root = check_note(bundle["checkpoint"], key)
        for i, e in enumerate(bundle["entries"]):
            check_entry(i, e, size, root)
    except (Rejected, KeyError, TypeError, ValueError) as e:
        what = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        print(f"REJECTED: {what}", file=sys.stderr)
        return 1
    print(f"OK: {len(bundle['entries'])} entr{'y' if len(bundle['entries']) == 1 else 'ies'} "
          f"proven against {origin} at tree size {size}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
