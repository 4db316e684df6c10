#!/usr/bin/env python3
"""A verifier of C2SP tlog-cosignature (cosignature/v1, Ed25519) written from the spec for the
tests, independently of event-audit's own note code.

Usage: cosignature_check.py WITNESS_VKEY_FILE NOTE_FILE
Prints one line per valid cosignature by the witness ("ok <timestamp>"); exit 0 when at least
one verifies and none by that key fails, 1 otherwise, 2 on unusable input.

From the specs (c2sp.org/signed-note, c2sp.org/tlog-cosignature):
  vkey        = <name> "+" <8 hex key id> "+" base64(0x04 || 32-byte Ed25519 public key)
  key id      = SHA-256(<name> || "\\n" || 0x04 || public key)[:4]
  note        = text (ending in "\\n"), a blank line, signature lines "— <name> <base64>\\n";
                the text ends at the last blank line
  signature   = base64(key id || u64 big-endian timestamp || 64-byte Ed25519 signature)
  signed over = "cosignature/v1\\n" || "time " <decimal timestamp> "\\n" || the note text
"""
import base64, hashlib, sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def main():
    try:
        vkey = open(sys.argv[1]).read().strip()
        note = open(sys.argv[2], encoding="utf-8").read()
        name, key_id_hex, material = vkey.split("+", 2)
        raw = base64.b64decode(material, validate=True)
    except Exception as e:  # unusable input
        print(f"unusable input: {e}", file=sys.stderr)
        return 2
    if len(raw) != 33 or raw[0] != 0x04:
        print("not a cosignature/v1 vkey (0x04 || 32 bytes)", file=sys.stderr)
        return 2
    key_id = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
    if key_id.hex() != key_id_hex:
        print(f"key id {key_id_hex} is not SHA-256(name || LF || 0x04 || key)[:4] = {key_id.hex()}", file=sys.stderr)
        return 1
    public = Ed25519PublicKey.from_public_bytes(raw[1:])
    cut = note.rfind("\n\n")
    if cut < 0 or not note.endswith("\n"):
        print("not a signed note", file=sys.stderr)
        return 1
    text, sig_lines = note[: cut + 1], note[cut + 2 :].rstrip("\n").split("\n")
    good = 0
    for line in sig_lines:
        if not line.startswith("\u2014 "):
            print(f"not a signature line: {line!r}", file=sys.stderr)
            return 1
        who, b64 = line[2:].rsplit(" ", 1)
        blob = base64.b64decode(b64, validate=True)
        if who != name or blob[:4] != key_id:
            continue  # another key's signature: ignored, as the spec says
        if len(blob) != 4 + 8 + 64:
            print("a cosignature by this key has the wrong length", file=sys.stderr)
            return 1
        t = int.from_bytes(blob[4:12], "big")
        message = b"cosignature/v1\n" + f"time {t}\n".encode() + text.encode()
        try:
            public.verify(blob[12:], message)
        except InvalidSignature:
            print("a cosignature by this key does not verify", file=sys.stderr)
            return 1
        print(f"ok {t}")
        good += 1
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
