#!/usr/bin/env python3
"""A reference C2SP tlog-tiles log writer, written for the tests from the spec text
(c2sp.org/tlog-tiles v0.1.0, RFC 6962 section 2.1, c2sp.org/tlog-checkpoint,
c2sp.org/signed-note), independently of event-audit's own tile code. tests/it/tiles_interop.rs
compares every file it writes with the project's, byte for byte.

Usage: tiles_reference.py ENTRIES_FILE OUT_DIR ORIGIN KEY_NAME SEED_HEX
ENTRIES_FILE holds one entry per line in hex (an empty line is an empty entry). Writes under
OUT_DIR the tiles and entry bundles of the tree of all the entries, and its checkpoint signed
with the Ed25519 key of that 32-byte seed. Exit 0, or 2 on unusable input.

From the specs:
  leaf hash     = SHA-256(0x00 || entry); node = SHA-256(0x01 || left || right)
  MTH(D[0:n])   = for n > 1, with k the largest power of two smaller than n:
                  node(MTH(D[0:k]), MTH(D[k:n])); MTH of one entry is its leaf hash
  tile n, level l, hash i = MTH(D[(n*256 + i) * 256**l : (n*256 + i + 1) * 256**l])
  partial tile  = at level l of a tree of size s, floor(s / 256**l) mod 256 hashes (none if 0)
  paths         = tile/<l>/<N>[.p/<W>], tile/entries/<N>[.p/<W>]; N in 3-digit elements,
                  all but the last prefixed with "x" (1234067 -> x001/x234/067)
  entry bundle  = the entries of a level-0 tile's range, each as uint16 big-endian length || entry
  checkpoint    = "<origin>\\n<size>\\n<base64 root>\\n", then "\\n", then
                  "— <key name> base64(key ID || Ed25519 signature of the text)\\n"
  key ID        = SHA-256(key name || 0x0A || 0x01 || 32-byte public key)[:4]
"""
import base64
import hashlib
import os
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

WIDTH = 256


def leaf(entry):
    return hashlib.sha256(b"\x00" + entry).digest()


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def mth(leaves, lo, hi):
    """MTH(D[lo:hi]) from the entries' leaf hashes (RFC 6962 section 2.1)."""
    n = hi - lo
    if n == 1:
        return leaves[lo]
    k = 1
    while k * 2 < n:
        k *= 2
    return node(mth(leaves, lo, lo + k), mth(leaves, lo + k, hi))


def index_path(n):
    parts = ["%03d" % (n % 1000)]
    while n >= 1000:
        n //= 1000
        parts.insert(0, "x%03d" % (n % 1000))
    return "/".join(parts)


def tile_path(kind, n, width):
    path = "tile/%s/%s" % (kind, index_path(n))
    return path if width == WIDTH else "%s.p/%d" % (path, width)


def tiles(leaves, entries):
    """Every tile and bundle of the tree of all the entries: (path, bytes)."""
    size = len(leaves)
    level = 0
    while size // WIDTH**level > 0:
        span = WIDTH**level
        count = size // span
        for n in range((count + WIDTH - 1) // WIDTH):
            width = min(WIDTH, count - n * WIDTH)
            hashes = [mth(leaves, (n * WIDTH + i) * span, (n * WIDTH + i + 1) * span)
                      for i in range(width)]
            yield tile_path(level, n, width), b"".join(hashes)
            if level == 0:
                bundle = b"".join(len(e).to_bytes(2, "big") + e
                                  for e in entries[n * WIDTH:n * WIDTH + width])
                yield tile_path("entries", n, width), bundle
        level += 1


def checkpoint(origin, size, root, name, seed):
    key = Ed25519PrivateKey.from_private_bytes(seed)
    public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    key_id = hashlib.sha256(name.encode() + b"\x0a" + b"\x01" + public).digest()[:4]
    text = "%s\n%d\n%s\n" % (origin, size, base64.b64encode(root).decode())
    signature = base64.b64encode(key_id + key.sign(text.encode())).decode()
    return "%s\n\u2014 %s %s\n" % (text, name, signature)


def main():
    try:
        entries_file, out, origin, name, seed_hex = sys.argv[1:]
        with open(entries_file) as f:
            entries = [bytes.fromhex(line.strip()) for line in f.read().splitlines()]
        seed = bytes.fromhex(seed_hex)
        assert len(seed) == 32 and entries and all(len(e) < 65536 for e in entries)
    except Exception as e:  # unusable input
        print("unusable input: %r" % (e,), file=sys.stderr)
        return 2
    leaves = [leaf(e) for e in entries]
    for path, data in tiles(leaves, entries):
        full = os.path.join(out, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)
    note = checkpoint(origin, len(leaves), mth(leaves, 0, len(leaves)), name, seed)
    with open(os.path.join(out, "checkpoint"), "wb") as f:
        f.write(note.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
