#!/usr/bin/env python3
"""Checks an event-audit evidence bundle offline, independently of event-audit itself.

Usage: verify_bundle.py BUNDLE.json --public-key KEY.pub [--origin NAME] [--witness-policy FILE]
       verify_bundle.py FILE.tlog-proof --entry HEX --public-key KEY.pub [--origin NAME] [--witness-policy FILE]
Needs Python 3.8+ and `cryptography` (Ed25519). Exit 0: every entry is proven against the signed
checkpoint (one JSON line on stdout, as `event-audit verify-proof` prints it, and an OK line on
stderr); 1: rejected (the line names what failed); 2: unusable input (a file, key or policy that
cannot be read, a bundle whose JSON or shape is not a bundle's).

Written from the README ("Checking an evidence bundle") and the C2SP signed-note,
tlog-checkpoint and tlog-cosignature specifications, not from event-audit's code. Checked: the
bundle's JSON (strict, no repeated keys) and shape; the checkpoint note's signature by the public
key (every line by that key must verify), its origin (--origin), the witness policy's quorum of
valid cosignatures (--witness-policy); per entry: SHA-256(leaf_data) == row_hash, leaf_data read
by the row-encoding grammar (versions 1, 2 and 3, every byte used; a version 3 leaf's personal
columns and raw message from the entry's opening, SHA-256(opening) == the leaf's commitment, or
none of them when the opening is null: the row erased), raw == the leaf's raw field,
stream, stream_seq and every key of columns against the leaf, and the RFC 9162 inclusion proof
of leaf SHA-256(0x00 || row_hash) at leaf_index. columns must hold exactly the keys the format
defines for the leaf's version: one missing or unknown is unusable input.

An event-audit-bundle/4 (`prove --account A --complete`) is /3 with a `completeness` part that
proves its entries (none, possibly) are every row about a person: its record, an entry checked
as any entry is, is a row of stream event-audit.index whose raw message is the account index's
record (event-audit-account-index/1: the index root, the log size it covers, the VRF key); each
identifier's label is the first half of the RFC 9381 ECVRF-EDWARDS25519-SHA512-TAI output its
proof verifies to under that key, its index proof leads to the root and the leaves it lists
(each an entry of the bundle) fold to the value found there; the entries are exactly the union
of those leaves, and none links the person to an identifier the bundle leaves out.

A C2SP tlog-proof (c2sp.org/tlog-proof@v1, from its text) is checked for --entry, the row hash,
in the spec's steps: 1, the leaf SHA-256(0x00 || entry); 2, the checkpoint's origin (--origin,
else the key's name) and the log's signature; 3, the policy's quorum of cosignatures; 4, the
inclusion proof. A rejection names the step.
"""
import argparse, base64, hashlib, json, re, sys
from decimal import Decimal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

FORMATS = ("event-audit-bundle/3", "event-audit-bundle/2", "event-audit-bundle/1",
           "event-audit-bundle/4")
V3_ENTRY = (FORMATS[0], FORMATS[3])  # the formats whose entries have an opening
MAX_DEPTH, MAX_SIGNATURES, U64 = 1024, 64, 2**64 - 1
DASH = "\u2014 "
# Unicode White_Space: never in a key name; separates a policy line's words.
WS = ("\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
      "\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
WORDS = re.compile("[^" + WS + "]+")
DECIMAL = re.compile("0|[1-9][0-9]*")

class Rejected(Exception):
    """The bundle does not prove what it shows (exit 1)."""

class Unusable(Exception):
    """Not a usable input (exit 2)."""

class Int(Decimal):
    """A JSON number written as an integer."""

def sha256(*parts):
    return hashlib.sha256(b"".join(parts)).digest()

def b64(text, what, err=Rejected):
    """Canonical standard base64 (padded, no stray bits)."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (ValueError, TypeError):
        raise err(f"{what} is not valid base64")
    if base64.b64encode(raw).decode() != text: raise err(f"{what} is not valid base64")
    return raw

# --- keys, notes, cosignatures ------------------------------------------------------------

P = 2**255 - 19
D = -121665 * pow(121666, P - 2, P) % P

def on_curve(k):
    """Whether 32 bytes decompress to an Ed25519 point (y from the low 255 bits, mod p)."""
    y = (int.from_bytes(k, "little") & ((1 << 255) - 1)) % P
    u, v = (y * y - 1) % P, (D * y * y + 1) % P
    if v == 0: return False
    x2 = u * pow(v, P - 2, P) % P
    return x2 == 0 or pow(x2, (P - 1) // 2, P) == 1

def valid_name(name):
    return name != "" and "+" not in name and not any(c in WS for c in name)

def vkey(text, alg, err):
    """`<name>+<8 hex key id>+base64(alg || key)` -> (name, key id, Ed25519PublicKey)."""
    parts = text.split("+", 2)
    if len(parts) != 3: raise err("expected <name>+<key id>+<key>")
    name, kid, key = parts
    if not valid_name(name): raise err("the key name is empty or holds '+' or spaces")
    raw = b64(key, "the key", err)
    if len(raw) != 33 or raw[0] != alg:
        raise err(f"not an Ed25519 key of signature type 0x{alg:02x}")
    if not re.fullmatch("[0-9a-fA-F]{8}", kid): raise err("the key id is not 8 hex digits")
    if sha256(name.encode(), b"\n", raw)[:4] != bytes.fromhex(kid):
        raise err("the key id does not match the name and key")
    if not on_curve(raw[1:]): raise err("not a valid Ed25519 public key")
    return name, bytes.fromhex(kid), Ed25519PublicKey.from_public_bytes(raw[1:])

def verifies(public, sig, msg):
    try:
        public.verify(sig, msg)
        return True
    except InvalidSignature:
        return False

def split_note(note):
    """C2SP signed note: (text up to and with the last blank line's first newline, signatures)."""
    bad = lambda why: Rejected(f"checkpoint signature: malformed note: {why}")
    if any(c < " " and c != "\n" for c in note): raise bad("it holds a control character")
    at = note.rfind("\n\n")
    if at < 0: raise bad("no blank line before the signatures")
    text, rest = note[: at + 1], note[at + 2 :]
    if not rest.endswith("\n"): raise bad("the note does not end with a newline")
    sigs = []
    for line in rest[:-1].split("\n"):
        if not line.startswith(DASH): raise bad("a signature line does not start with '\u2014 '")
        name, space, sig = line[len(DASH) :].partition(" ")
        if not space or not valid_name(name): raise bad("a signature line lacks a valid key name")
        blob = b64(sig, "a signature", bad)
        if len(blob) < 4: raise bad("a signature is shorter than its key id")
        sigs.append((name, blob))
    if len(sigs) > MAX_SIGNATURES: raise bad("too many signatures")
    return text, sigs

def open_checkpoint(note, key):
    """The checkpoint (origin, size, root) once every signature line by `key` verifies."""
    name, kid, public = key
    text, sigs = split_note(note)
    label = f"{name}+{kid.hex()}"
    mine = [blob for n, blob in sigs if n == name and blob[:4] == kid]
    if not mine:
        raise Rejected(f"checkpoint signature: no signature by key {label} (signed by another key)")
    for blob in mine:
        if len(blob) != 68 or not verifies(public, blob[4:], text.encode()):
            raise Rejected(f"checkpoint signature: the signature by key {label} does not verify")
    bad = lambda why: Rejected(f"checkpoint signature: malformed checkpoint: {why}")
    lines = text[:-1].split("\n")
    if lines[0] == "": raise bad("no origin line")
    if len(lines) < 2 or not DECIMAL.fullmatch(lines[1]) or int(lines[1]) > U64:
        raise bad("the tree size is not a decimal number without leading zeros")
    root = b64(lines[2], "the root", bad) if len(lines) > 2 else b""
    if len(root) != 32: raise bad("the root is not 32 bytes of base64")
    if "" in lines[3:]: raise bad("an extension line is empty")
    return text, sigs, (lines[0], int(lines[1]), root)

def _url(u, err):
    host = re.sub(r"^https?://", "", u.rstrip("/"), count=1)
    if host == u.rstrip("/") or not host or host.startswith("/"):
        raise err("the URL is not http:// or https:// and a host")

def _legacy(text):
    """No `log` or `group` line, and a `witness` line whose first word is a witness vkey."""
    found = False
    for line in text.split("\n"):
        w = WORDS.findall(line)
        if w and w[0] in ("log", "group"): return False
        if len(w) >= 2 and w[0] == "witness":
            try:
                vkey(w[1], 0x04, Unusable)
                found = True
            except Unusable:
                pass
    return found

MAX_ENTRIES = 256

def read_policy(text):
    """C2SP tlog-policy (`log <vkey> [url]`, `witness <name> <vkey> [url]`, `group <name>
    all|any|<k> <names...>`, `quorum <name>|none`), or the format read before it (`witness <vkey>
    <url>` lines and `quorum <n>`, read as one group). Returns (logs, witnesses, groups,
    quorum): witnesses are (policy name, key name, key id, key), groups (name, k, members) with
    members ("w"|"g", index), quorum None or a member."""
    if _legacy(text): return read_legacy_policy(text)
    logs, witnesses, groups, names, quorum = [], [], [], {}, False
    for n, line in enumerate(text.split("\n"), 1):
        err = lambda why: Unusable(f"the witness policy, line {n}: {why}")
        if any(c != "\t" and (ord(c) < 0x20 or ord(c) == 0x7f) for c in line):
            raise err("a control character other than tab (tlog-policy allows only tab and newline)")
        words = [w for w in re.split("[ \t]", line) if w]
        if not words or words[0].startswith("#"): continue
        def define(name, m):
            if name == "none": raise err("`none` is predefined and cannot name a witness or group")
            if name in names: raise err("this name is defined twice")
            names[name] = m
        if words[0] == "log" and len(words) in (2, 3):
            k = vkey(words[1], 0x01, lambda why: err(f"the log's vkey: {why}"))
            if any(x[2].public_bytes_raw() == k[2].public_bytes_raw() for x in logs):
                raise err("this log's key is listed twice")
            if len(words) == 3: _url(words[2], err)
            logs.append(k)
        elif words[0] == "witness" and len(words) in (3, 4):
            k = vkey(words[2], 0x04, lambda why: err(f"the witness's vkey: {why}"))
            if any(x[3].public_bytes_raw() == k[2].public_bytes_raw() for x in witnesses):
                raise err("this witness's key is listed twice")
            if len(words) == 4: _url(words[3], err)
            define(words[1], ("w", len(witnesses)))
            witnesses.append((words[1],) + k)
        elif words[0] == "group" and len(words) >= 4:
            members = []
            for m in words[3:]:
                if m not in names:
                    raise err(f"group member `{m}` is not a witness or group defined above")
                if names[m] in members: raise err(f"group member `{m}` is listed twice")
                members.append(names[m])
            k = {"all": len(members), "any": 1}.get(words[2])
            if k is None:
                if not DECIMAL.fullmatch(words[2]) or not 1 <= int(words[2]) <= len(members):
                    raise err(f"the threshold is not all, any or a number from 1 to {len(members)}")
                k = int(words[2])
            define(words[1], ("g", len(groups)))
            groups.append((words[1], k, members))
        elif words[0] == "quorum" and len(words) == 2:
            if quorum is not False: raise err("a second quorum line")
            if words[1] == "none": quorum = None
            elif words[1] in names: quorum = names[words[1]]
            else: raise err(f"quorum `{words[1]}` is not a witness or group defined above")
        else:
            raise err("expected `log <vkey> [<url>]`, `witness <name> <vkey> [<url>]`, "
                      "`group <name> all|any|<k> <name>...` or `quorum <name>|none` (C2SP tlog-policy)")
        if max(len(logs), len(witnesses), len(groups)) > MAX_ENTRIES:
            raise err(f"more than {MAX_ENTRIES} logs, witnesses or groups")
    if quorum is False:
        raise Unusable("the witness policy has no quorum line (tlog-policy: `quorum <name>` or `quorum none`)")
    return logs, witnesses, groups, quorum

def read_legacy_policy(text):
    """`witness <vkey> <url>` lines and `quorum <n>` (default: every witness); `#` comments."""
    print("verify_bundle.py: note: the witness policy is in the format read before C2SP "
          "tlog-policy; it is still read: rewrite it as `witness <name> <vkey> <url>` lines, a "
          "`group` and `quorum <name>`", file=sys.stderr)
    witnesses, quorum = [], None
    for n, line in enumerate(text.split("\n"), 1):
        err = lambda why: Unusable(f"the witness policy, line {n}: {why}")
        words = WORDS.findall(line.split("#", 1)[0])
        if not words: continue
        if words[0] == "witness" and len(words) == 3:
            w = vkey(words[1], 0x04, err)
            if any(x[1:3] == w[:2] for x in witnesses): raise err("this witness is listed twice")
            _url(words[2], err)
            witnesses.append((w[0],) + w)
        elif words[0] == "quorum" and len(words) == 2:
            if not DECIMAL.fullmatch(words[1]) or not 0 < int(words[1]) <= U64:
                raise err("the quorum is not a number above 0")
            if quorum is not None: raise err("a second quorum line")
            quorum = int(words[1])
        else:
            raise err("expected `witness <vkey> <url>` or `quorum <n>`")
        if len(witnesses) > MAX_ENTRIES: raise err(f"more than {MAX_ENTRIES} witnesses")
    if not witnesses: raise Unusable("the witness policy names no witness")
    quorum = len(witnesses) if quorum is None else quorum
    if quorum > len(witnesses):
        raise Unusable(f"quorum {quorum} is larger than the {len(witnesses)} witness(es) the policy names")
    group = ("quorum", quorum, [("w", i) for i in range(len(witnesses))])
    return [], witnesses, [group], ("g", 0)

def check_log(policy, key):
    """The policy's log lines, if any, must name the log's key (name and key)."""
    logs = policy[0]
    name, kid, public = key
    if logs and not any(l[0] == name and l[1] == kid for l in logs):
        raise Unusable(f"the policy's log lines do not name the log's key {name}+{kid.hex()} "
                       "(the policy is another log's; give the one written for this log)")

def _met(policy, m, by):
    _, _, groups, _ = policy
    if m[0] == "w": return m[1] in by
    _, k, members = groups[m[1]]
    return sum(1 for x in members if _met(policy, x, by)) >= k

def describe(policy):
    _, witnesses, groups, q = policy
    if q is None: return "none"
    if q[0] == "w": return witnesses[q[1]][0]
    name, k, members = groups[q[1]]
    return f"{name} ({k} of {len(members)})"

def cosigned(text, sigs, policy):
    """The policy names of the witnesses with a valid cosignature/v1 on the note's text, once
    they meet the quorum."""
    _, witnesses, _, quorum = policy
    by = set()
    for i, (label, name, kid, public) in enumerate(witnesses):
        lines = [blob for n, blob in sigs if n == name and blob[:4] == kid]
        for blob in lines:
            t = int.from_bytes(blob[4:12], "big")
            msg = f"cosignature/v1\ntime {t}\n{text}".encode()
            if len(blob) != 76 or t >= 2**63 or not verifies(public, blob[12:], msg):
                raise Rejected(f"witness policy: the cosignature by witness {name}+{kid.hex()} "
                               "does not verify (forged or altered)")
        if lines:
            by.add(i)
    names = sorted(witnesses[i][0] for i in by)
    if quorum is not None and not _met(policy, quorum, by):
        raise Rejected(f"witness policy: the cosignatures on the checkpoint do not meet the witness "
                       f"policy's quorum {describe(policy)} (cosigned by: {', '.join(names) or 'none'})")
    return names

# --- JSON ---------------------------------------------------------------------------------

def number(text):
    exp = re.search("[eE][-+]?0*([0-9]*)$", text)
    if exp and len(exp.group(1)) > 9: raise ValueError("a number's exponent has more than 9 digits")
    return Decimal(text)

def load_json(text, unique):
    """Strict JSON: numbers exact, no NaN, no lone surrogates, nesting <= 1,024; a repeated key
    refused (`unique`, a bundle) or the last kept (JSON from a leaf)."""
    def pairs(items):
        out = {}
        for k, v in items:
            if unique and k in out: raise ValueError("a key repeated within one object")
            out[k] = v
        return out

    def constant(name):
        raise ValueError(f"{name} is not JSON")

    value = json.loads(text, object_pairs_hook=pairs, parse_int=Int, parse_float=number,
                       parse_constant=constant)
    todo = [(value, 0)]
    while todo:
        v, depth = todo.pop()
        items = list(v.items()) if isinstance(v, dict) else [(None, x) for x in v] \
            if isinstance(v, list) else None
        if items is None:
            if isinstance(v, str):
                v.encode("utf-8")  # a lone surrogate raises UnicodeEncodeError (a ValueError)
            continue
        if depth + 1 > MAX_DEPTH: raise ValueError("nested deeper than 1,024 arrays and objects")
        for k, x in items:
            if k is not None:
                k.encode("utf-8")
            todo.append((x, depth + 1))
    return value

def same(a, b):
    """Equal as JSON values: same kind; numbers by value; objects as maps; arrays in order."""
    if isinstance(a, Decimal): return isinstance(b, Decimal) and a == b
    if isinstance(a, list): return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b

def render(v):
    if v is None or isinstance(v, bool): return json.dumps(v)
    if isinstance(v, Decimal): return str(v)
    if isinstance(v, list): return "[" + ",".join(map(render, v)) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + render(x)
                              for k, x in v.items()) + "}"
    return json.dumps(v, ensure_ascii=False)

def shown(v):
    t = render(v)
    return t if len(t) <= 120 else t[:120] + "\u2026"

# --- times --------------------------------------------------------------------------------

TIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})"
                  r"(?:\.([0-9]{1,9}))?Z")

def days_from_civil(y, m, d):
    """Days since 1970-01-01 of a proleptic Gregorian date (after H. Hinnant)."""
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468

def time_text(us):
    """Microseconds since 1970 as the time text (for messages)."""
    secs, frac = divmod(us, 10**6)
    z, secs = divmod(secs, 86400)
    z += 719468
    era, doe = divmod(z, 146097)
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d, m = doy - (153 * mp + 2) // 5 + 1, mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (m <= 2)
    return f'"{y:04}-{m:02}-{d:02}T{secs // 3600:02}:{secs // 60 % 60:02}:{secs % 60:02}.{frac:06}Z"'

def time_us(s):
    """`YYYY-MM-DDTHH:MM:SS[.f]Z` as microseconds since 1970 (None: malformed or sub-microsecond)."""
    m = TIME.fullmatch(s) if isinstance(s, str) else None
    if not m: return None
    y, mo, d, h, mi, se = (int(g) for g in m.groups()[:6])
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    month = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    ns = int((m.group(7) or "").ljust(9, "0"))
    if not (1 <= mo <= 12 and 1 <= d <= month[mo - 1] and h < 24 and mi < 60 and se < 60) or ns % 1000:
        return None
    return (((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + se) * 10**6 + ns // 1000

# --- the leaf -----------------------------------------------------------------------------

TAGS = {b"event-audit row v1\0": 1, b"event-audit row v2\0": 2, b"event-audit row v3\0": 3}
TEXTS = ("headers", "envelope", "event_id", "event_type", "event_version", "status", "errors",
         "unknown_fields", "account_number")

class Reader:
    def __init__(self, data):
        self.data, self.at = data, 19

    def take(self, n, name):
        if n > len(self.data) - self.at:
            raise Rejected(f"leaf data: {name}: runs past the end of the leaf data")
        self.at += n
        return self.data[self.at - n : self.at]

    def signed(self, b):
        return int.from_bytes(b, "big", signed=True)

    def field(self, name, nullable):
        n = int.from_bytes(self.take(8, name), "big")
        if n == U64:
            if nullable: return None
            raise Rejected(f"leaf data: {name}: NULL where the encoding has no NULL")
        return self.take(n, name)

    def text(self, name, nullable=True):
        b = self.field(name, nullable)
        try:
            return None if b is None else b.decode("utf-8")
        except UnicodeDecodeError:
            raise Rejected(f"leaf data: {name}: not UTF-8")

    def int(self, name, nullable=False):
        b = self.field(name, nullable)
        if b is not None and len(b) != 8:
            raise Rejected(f"leaf data: {name}: an integer field that is not 8 bytes long")
        return None if b is None else self.signed(b)

def parse_v3(data):
    """Row encoding 3 (docs/auditors.md): the fields outside the commitment, then the
    commitment; the personal columns null and raw empty until `open_v3` fills them."""
    r = Reader(data)
    f = {"version": 3, "stream": r.text("stream", False)}
    for name in ("stream_seq", "published_at", "received_at"):
        f[name] = r.int(name)
    f["subject"] = r.text("subject", False)
    f["delivery_count"] = r.int("delivery_count")
    if not -(2**31) <= f["delivery_count"] < 2**31:
        raise Rejected("leaf data: delivery_count: beyond a 32-bit integer")
    for name in ("envelope", "event_type", "event_version", "status", "unknown_fields"):
        f[name] = r.text(name, name != "status")
    f["occurred_at"] = r.int("occurred_at", True)
    f["payload_error"] = r.text("payload_error")
    f["catalogue"] = r.text("catalogue", False)
    f["commitment"] = r.field("commitment", False)
    if len(f["commitment"]) != 32: raise Rejected("leaf data: commitment: not 32 bytes")
    if r.at != len(data):
        raise Rejected("leaf data: commitment: bytes follow the commitment (the last field)")
    for name in ("headers", "event_id", "errors", "account_number", "payload_place"):
        f[name] = None
    f["raw"], f["erased"] = b"", True
    return f

def open_v3(f, opening):
    """Fills a version 3 leaf's personal columns from its commitment's opening: the 32-byte salt,
    then length-prefixed raw, payload_place, headers, event_id, account_number, errors."""
    if sha256(opening) != f["commitment"]:
        raise Rejected("leaf data: opening: SHA-256 of the opening is not the leaf's commitment")
    r = Reader(opening)
    r.at = 0
    r.take(32, "salt")
    f["raw"] = r.field("raw", False)
    place = r.field("payload_place", True)
    if place is not None and len(place) != 16:
        raise Rejected("leaf data: payload_place: not two 8-byte integers")
    if place is not None:
        f["payload_place"] = (int.from_bytes(place[:8], "big"), int.from_bytes(place[8:], "big"))
        p = f["payload_place"]
        if not p[0] <= p[1] <= len(f["raw"]):
            raise Rejected("leaf data: payload_place: not a range within the raw message")
    for name in ("headers", "event_id", "account_number", "errors"):
        f[name] = r.text(name)
    if r.at != len(opening):
        raise Rejected("leaf data: errors: bytes follow the errors (the opening's last field)")
    f["erased"] = False

def parse_leaf(data):
    """A row's canonical encoding (README: versions 1, 2 and 3) -> its fields; every byte used."""
    version = TAGS.get(data[:19])
    if version is None:
        raise Rejected("leaf data: version tag: not `event-audit row v1`, `v2` or `v3`")
    if version == 3: return parse_v3(data)
    r, f = Reader(data), {"version": version}
    f["stream"] = r.text("stream", False)
    if version == 2:
        for name in ("stream_seq", "published_at", "received_at"):
            f[name] = r.int(name)
        f["subject"] = r.text("subject", False)
        f["delivery_count"] = r.int("delivery_count")
        if not -(2**31) <= f["delivery_count"] < 2**31:
            raise Rejected("leaf data: delivery_count: beyond a 32-bit integer")
    else:
        for name in ("stream_seq", "published_at", "received_at"):
            f[name] = r.signed(r.take(8, name))
        f["subject"] = r.text("subject", False)
        f["delivery_count"] = r.signed(r.take(4, "delivery_count"))
    for name in TEXTS:
        f[name] = r.text(name, name != "status")
    f["payload_place"] = None
    if version == 2:
        f["occurred_at"] = r.int("occurred_at", True)
        place = r.field("payload_place", True)
        if place is not None and len(place) != 16:
            raise Rejected("leaf data: payload_place: not two 8-byte integers")
        if place is not None:
            f["payload_place"] = (int.from_bytes(place[:8], "big"), int.from_bytes(place[8:], "big"))
        f["payload_error"] = r.text("payload_error")
        f["catalogue"] = r.text("catalogue", False)
    else:
        present = r.take(1, "occurred_at")[0]
        if present > 1:
            raise Rejected("leaf data: occurred_at: its presence byte is neither 0 nor 1")
        f["occurred_at"] = r.signed(r.take(8, "occurred_at")) if present else None
    f["raw"] = r.field("raw", False)
    if r.at != len(data):
        raise Rejected("leaf data: raw: bytes follow the raw message (the last field)")
    p = f["payload_place"]
    if p is not None and not p[0] <= p[1] <= len(f["raw"]):
        raise Rejected("leaf data: payload_place: not a range within the raw message")
    return f

# --- columns ------------------------------------------------------------------------------

COLUMNS = ("stream", "stream_seq", "published_at", "received_at", "subject", "delivery_count",
           "headers", "envelope", "event_id", "event_type", "event_version", "status", "errors",
           "unknown_fields", "account_number", "occurred_at", "payload_place", "payload",
           "payload_error", "catalogue")
V2_ONLY = ("payload_place", "payload", "payload_error", "catalogue")
PERSONAL = ("headers", "event_id", "errors", "account_number", "payload_place", "payload")

def defined(fmt, version, erased=False):
    """The keys `columns` holds, no more, no fewer (README, "The format"): formats 4, 3 and 2,
    every column the leaf covers (a version 3 leaf without an opening, erased: none of
    PERSONAL); format 1, the nineteen its prove wrote. None: no leaf version the format defines."""
    if fmt == FORMATS[2]:
        return [k for k in COLUMNS if k != "payload_place"] if version in (1, 2) else None
    if version == 3:
        return [k for k in COLUMNS[2:] if not (erased and k in PERSONAL)] if fmt in V3_ENTRY else None
    if version not in (1, 2): return None
    return [k for k in COLUMNS[2:] if version == 2 or k not in V2_ONLY]

TIMES = ("published_at", "received_at", "occurred_at")

class Unreadable:
    def __init__(self, why):
        self.why = why

def leaf_json(text, why):
    try:
        return load_json(text, unique=False)
    except (ValueError, RecursionError):
        return Unreadable(why)

def expected(key, f):
    """What the leaf says `key` holds: a JSON value, a time (int or None), or Unreadable."""
    if f["version"] == 1 and key in V2_ONLY: return None
    if f.get("erased") and key in PERSONAL: return Unreadable("the row is erased: the leaf no longer opens to it")
    v = f.get(key)
    if key in ("headers", "errors", "unknown_fields"):
        return None if v is None else leaf_json(v, f"the leaf's {key.replace('_', ' ')} are not JSON")
    if key == "payload":
        p = f["payload_place"]
        if p is None: return None
        try:
            text = f["raw"][p[0] : p[1]].decode("utf-8")
        except UnicodeDecodeError:
            return Unreadable("the leaf's payload place does not hold JSON")
        return leaf_json(text, "the leaf's payload place does not hold JSON")
    if key == "payload_place": return None if v is None else [Decimal(v[0]), Decimal(v[1])]
    if key in ("stream_seq", "delivery_count"): return Decimal(v)
    return v

def check_field(field, key, value, f):
    if key not in COLUMNS:
        raise Rejected(f"field {field}: not a field the verifier checks "
                       "(nothing unchecked may be shown as evidence)")
    want = expected(key, f)
    if isinstance(want, Unreadable):
        raise Rejected(f"field {field}: the bundle says {shown(value)}, but {want.why}")
    if key in TIMES:
        ok = value is None if want is None else time_us(value) == want
        leaf = "null" if want is None else time_text(want)
    else:
        ok, leaf = same(value, want), shown(want)
    if not ok:
        raise Rejected(f"field {field}: the bundle says {shown(value)}, the leaf says {leaf}")

# --- entries ------------------------------------------------------------------------------

def inclusion_root(index, size, leaf, proof):
    """RFC 9162, 2.1.3.2: the root an inclusion proof leads to (None when it cannot)."""
    if index >= size: return None
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0: return None
        if fn & 1 or fn == sn:
            r = sha256(b"\x01", p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = sha256(b"\x01", r, p)
        fn, sn = fn >> 1, sn >> 1
    return r if sn == 0 else None

def check_entry(e, size, root):
    data, raw = b64(e["leaf_data"], "leaf_data"), b64(e["raw"], "raw")
    if not re.fullmatch("[0-9a-fA-F]{64}", e["row_hash"]):
        raise Rejected("row_hash is not 64 hex digits")
    if sha256(data) != bytes.fromhex(e["row_hash"]):
        raise Rejected("row hash: row_hash is not SHA-256 of the leaf data")
    opening = e.get("opening")
    f = parse_leaf(data)
    if opening is not None:
        if f["version"] != 3:
            raise Rejected("opening: given for a leaf without a commitment (not row encoding version 3)")
        open_v3(f, b64(opening, "opening"))
    if f["raw"] != raw: raise Rejected("raw: the bundle's raw bytes are not the leaf's raw field")
    check_field("stream", "stream", e["stream"], f)
    check_field("stream_seq", "stream_seq", e["stream_seq"], f)
    for key, value in e["columns"].items():
        check_field(f"columns.{key}", key, value, f)
    proof = [b64(p, "an inclusion_proof hash") for p in e["inclusion_proof"]]
    if any(len(p) != 32 for p in proof):
        raise Rejected("inclusion_proof: a proof hash is not 32 bytes")
    leaf = sha256(b"\x00", sha256(data))
    if inclusion_root(int(e["leaf_index"]), size, leaf, proof) != root:
        raise Rejected(f"inclusion proof of leaf {int(e['leaf_index'])} does not lead to the root "
                       f"of tree size {size}")

ENTRY = {"stream": str, "stream_seq": Int, "leaf_index": Int, "raw": str, "columns": dict,
         "leaf_data": str, "row_hash": str, "inclusion_proof": list}

def need(obj, key, kind, at):
    if key not in obj: raise Unusable(f"{at}{key}: missing")
    if not isinstance(obj[key], kind): raise Unusable(f"{at}{key}: not of the right JSON type")
    return obj[key]

def shape(b):
    """The bundle's fixed shape (anything else is unusable input); a /4 bundle's `completeness`
    read into b["completeness"] (`read_completeness`)."""
    if not isinstance(b, dict): raise Unusable("not a JSON object")
    v4 = b.get("format") == FORMATS[3]
    top = ("format", "checkpoint", "entries") + (("completeness",) if v4 else ())
    for k in b:
        if k not in top: raise Unusable(f"{k}: not a key of the bundle format")
    if need(b, "format", str, "") not in FORMATS:
        raise Unusable(f"format {b['format']!r} is not {FORMATS[0]} "
                       f"(nor {FORMATS[3]}, {FORMATS[1]} or {FORMATS[2]})")
    need(b, "checkpoint", str, "")
    # A completeness proof may show that no row is about the person.
    if not need(b, "entries", list, "") and not v4:
        raise Unusable("entries: none (a bundle proves at least one row)")
    for i, e in enumerate(b["entries"]):
        entry_shape(b["format"], e, f"entries[{i}]")
    if v4:
        if "completeness" not in b: raise Unusable("completeness: missing")
        b["completeness"] = read_completeness(b["completeness"], b["format"])
    return b

def entry_shape(fmt, e, place):
    at = place + "."
    if not isinstance(e, dict): raise Unusable(f"{place}: not an object")
    keys = dict(ENTRY, opening=(str, type(None))) if fmt in V3_ENTRY else ENTRY
    for k in e:
        if k not in keys: raise Unusable(f"{at}{k}: not a key of the bundle format")
    for k, kind in keys.items():
        need(e, k, kind, at)
    if not 0 <= e["leaf_index"] <= U64:
        raise Unusable(f"{at}leaf_index: not an integer from 0 to {U64}")
    if not all(isinstance(p, str) for p in e["inclusion_proof"]):
        raise Unusable(f"{at}inclusion_proof: not an array of strings")
    complete(fmt, e, at)

def complete(fmt, e, at):
    """columns holds exactly the keys defined for the leaf's version (a leaf_data that is not
    base64 or of no known version is left to the entry's check): an unknown key first, in the
    bundle's order, then a missing one."""
    try:
        version = TAGS.get(b64(e["leaf_data"], "leaf_data")[:19])
    except Rejected:
        return
    keys = defined(fmt, version, e.get("opening") is None)
    if keys is None: return
    whose = f"an {fmt} entry with a version {version} leaf"
    for k in e["columns"]:
        if k not in keys: raise Unusable(f"{at}columns.{k}: not a column of {whose}")
    for k in keys:
        if k not in e["columns"]:
            raise Unusable(f"{at}columns.{k}: missing ({whose} shows every column it defines)")

# --- RFC 9381 ECVRF-EDWARDS25519-SHA512-TAI (suite 0x03): verification ---------------------
#
# Written from RFC 9381 (sections 5.2, 5.3, 5.4.1.1, 5.4.3-5.4.5, 5.5) and RFC 8032 (5.1.2-5.1.4),
# standard library only (P and D above). Points are extended coordinates (X, Y, Z, T), x = X/Z,
# y = Y/Z, x*y = T/Z; scalars little-endian. Every value here is public: nothing needs constant
# time.

Q = 2**252 + 27742317777372353535851937790883648493  # the order of the base point
SQRT_M1 = pow(2, (P - 1) // 4, P)
BASE_Y = 4 * pow(5, P - 2, P) % P
BASE_X = 15112221349535400772501151409588531511454012693041857206046113283949847762202
BASE = (BASE_X, BASE_Y, 1, BASE_X * BASE_Y % P)
IDENTITY = (0, 1, 1, 0)
VRF_SUITE, VRF_PROOF_LEN = b"\x03", 80
def pt_add(p, q):
    """p + q (RFC 8032 5.1.4; complete: also doubles)."""
    a = (p[1] - p[0]) * (q[1] - q[0]) % P
    b = (p[1] + p[0]) * (q[1] + q[0]) % P
    c = 2 * p[3] * q[3] * D % P
    d = 2 * p[2] * q[2] % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)

def pt_neg(p):
    return (-p[0] % P, p[1], p[2], -p[3] % P)

def pt_mul(n, p):
    """n * p, double-and-add."""
    r = IDENTITY
    while n:
        if n & 1: r = pt_add(r, p)
        p, n = pt_add(p, p), n >> 1
    return r

def pt_is_identity(p):
    return p[0] % P == 0 and (p[1] - p[2]) % P == 0

def pt_encode(p):
    """point_to_string: RFC 8032 5.1.2, y little-endian with the sign of x in the top bit."""
    zi = pow(p[2], P - 2, P)
    x, y = p[0] * zi % P, p[1] * zi % P
    return (y | (x & 1) << 255).to_bytes(32, "little")

def pt_decode(s):
    """string_to_point: RFC 8032 5.1.3, strict (y < p; no x = 0 with the sign bit set). None if
    not a point."""
    if len(s) != 32: return None
    y = int.from_bytes(s, "little")
    sign, y = y >> 255, y & ((1 << 255) - 1)
    if y >= P: return None
    u, v = (y * y - 1) % P, (D * y * y + 1) % P
    x = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    if v * x * x % P == (-u) % P: x = x * SQRT_M1 % P
    if v * x * x % P != u: return None
    if x == 0 and sign: return None
    if x & 1 != sign: x = P - x
    return (x, y, 1, x * y % P)

def sha512(*parts):
    return hashlib.sha512(b"".join(parts)).digest()

def ecvrf_encode_to_curve(salt, alpha):
    """ECVRF_encode_to_curve_try_and_increment (5.4.1.1): the first 32 bytes of each hash read
    as a point (sign bit included), times the cofactor 8; None if no counter gives one."""
    for ctr in range(256):
        h = pt_decode(sha512(VRF_SUITE, b"\x01", salt, alpha, bytes([ctr]), b"\x00")[:32])
        if h is not None:
            h = pt_mul(8, h)
            if not pt_is_identity(h): return h
    return None

def ecvrf_challenge(*points):
    """ECVRF_challenge_generation (5.4.3) of Y, H, Gamma, U, V: the hash's first 16 bytes."""
    return sha512(VRF_SUITE, b"\x02", *map(pt_encode, points), b"\x00")[:16]

def ecvrf_decode_proof(pi):
    """ECVRF_decode_proof (5.4.4): (Gamma, c, s), or None (wrong length, Gamma not a point,
    s >= q)."""
    if len(pi) != VRF_PROOF_LEN: return None
    gamma = pt_decode(pi[:32])
    c, s = int.from_bytes(pi[32:48], "little"), int.from_bytes(pi[48:], "little")
    if gamma is None or s >= Q: return None
    return gamma, c, s

def ecvrf_proof_to_hash(pi):
    """ECVRF_proof_to_hash (5.2): beta (64 bytes) of a well-formed proof, or None. It does NOT
    verify the proof: use ecvrf_verify's result for that."""
    d = ecvrf_decode_proof(pi)
    if d is None: return None
    return sha512(VRF_SUITE, b"\x03", pt_encode(pt_mul(8, d[0])), b"\x00")

def ecvrf_verify(public, alpha, pi):
    """ECVRF_verify (5.3) with validate_key = TRUE (5.4.5): beta (64 bytes) if pi proves that
    beta is the VRF output of the 32-byte key `public` on `alpha`, else None."""
    y = pt_decode(public)
    if y is None or pt_is_identity(pt_mul(8, y)): return None  # not a point, or small order
    d = ecvrf_decode_proof(pi)
    h = ecvrf_encode_to_curve(public, alpha)
    if d is None or h is None: return None
    gamma, c, s = d
    u = pt_add(pt_mul(s, BASE), pt_neg(pt_mul(c, y)))  # U = s*B - c*Y
    v = pt_add(pt_mul(s, h), pt_neg(pt_mul(c, gamma)))  # V = s*H - c*Gamma
    if ecvrf_challenge(y, h, gamma, u, v) != pi[32:48]: return None
    return ecvrf_proof_to_hash(pi)


# --- completeness (event-audit-bundle/4) --------------------------------------------------
#
# The account index (event-audit-account-index/1) is a sparse Merkle tree from 32-byte labels
# (an identifier's VRF output) to the log leaves about it. SHA-256, one domain byte each: a
# label's value is its leaf count n and the fold of its leaves in log order, acc_0 = 32 zero
# bytes, acc_i+1 = SHA-256(0x02 || acc_i || u64be(leaf index) || row hash); a label's node
# SHA-256(0x00 || label || u64be(n) || acc); an empty subtree 32 zero bytes; a subtree of one
# label that label's node (lifted to where it is alone); of two or more SHA-256(0x01 || left ||
# right), left the labels whose bit at that depth (most significant bit of byte 0 first) is 0.
# A label's proof: the terminal its path meets (null: an empty subtree; or a label's node, its
# own or another sharing the path's bits) and the siblings from the root's children down.

INDEX = "event-audit-account-index/1"
RECORD_STREAM = "event-audit.index"
MAX_IDENTIFIERS, MAX_INDEX_DEPTH = 64, 256
ALPHA_PREFIX = b"event-audit/account-index/v1\0"  # an identifier's VRF input: this, its UTF-8
# The events whose two identifier fields link a person's numbers: of resource_type account.
LINK_EVENTS, LINK_FIELDS = "data_import.import_process.", ("external_identifier", "identifier")
EMPTY = bytes(32)

def quoted(s):
    return json.dumps(s, ensure_ascii=False)

def _only(obj, keys, at, err=Unusable):
    """Exactly `keys`: an unknown key first (in the object's order), then a missing one."""
    for k in obj:
        if k not in keys: raise err(f"{at}{k}: not a key of the completeness format")
    for k in keys:
        if k not in obj: raise err(f"{at}{k}: missing")

def _uint(v, at, err=Unusable):
    if not isinstance(v, Int): raise err(f"{at}: not an integer")
    if v.is_signed() or v > U64: raise err(f"{at}: not an integer from 0 to {U64}")  # -0 too
    return int(v)

def _text(v, at):
    if not isinstance(v, str): raise Unusable(f"{at}: not a string")
    return v

def _b64(v, at):
    return b64(_text(v, at), at, lambda _: Unusable(f"{at}: not base64"))

def _hex(v, at):
    if not re.fullmatch("[0-9a-f]{64}", _text(v, at)):
        raise Unusable(f"{at}: not 64 lowercase hex digits")
    return bytes.fromhex(v)

def read_completeness(c, fmt):
    """The `completeness` object's shape: exactly `index` (the index format), `record` (an entry
    of the bundle's shape) and `identifiers` (1 to 64 claims, `read_claim`). Returns the record
    and the claims."""
    if not isinstance(c, dict): raise Unusable("completeness: not an object")
    _only(c, ("index", "record", "identifiers"), "completeness.")
    if _text(c["index"], "completeness.index") != INDEX:
        raise Unusable(f"completeness.index: {quoted(c['index'])} is not {INDEX}")
    entry_shape(fmt, c["record"], "completeness.record")
    items = c["identifiers"]
    if not isinstance(items, list): raise Unusable("completeness.identifiers: not an array")
    if not 1 <= len(items) <= MAX_IDENTIFIERS:
        raise Unusable(f"completeness.identifiers: from 1 to {MAX_IDENTIFIERS} identifiers")
    return {"record": c["record"], "claims": [read_claim(i, v) for i, v in enumerate(items)]}

def read_claim(i, v):
    """One identifier's claim: exactly `identifier` (a string), `vrf_proof` (base64), `leaves`
    (integers from 0 to 2^64 - 1) and `index_proof` (exactly `siblings`, at most 256 base64
    hashes of 32 bytes, and `terminal`: null, or exactly `label`, `count` and `acc`). Returns
    (identifier, vrf proof, leaves, siblings, terminal None or (label, count, acc))."""
    at = f"completeness.identifiers[{i}]"
    if not isinstance(v, dict): raise Unusable(f"{at}: not an object")
    _only(v, ("identifier", "vrf_proof", "leaves", "index_proof"), at + ".")
    if not isinstance(v["leaves"], list): raise Unusable(f"{at}.leaves: not an array")
    leaves = [_uint(n, f"{at}.leaves") for n in v["leaves"]]
    p, at_p = v["index_proof"], at + ".index_proof"
    if not isinstance(p, dict): raise Unusable(f"{at_p}: not an object")
    _only(p, ("siblings", "terminal"), at_p + ".")
    if not isinstance(p["siblings"], list): raise Unusable(f"{at_p}.siblings: not an array")
    if len(p["siblings"]) > MAX_INDEX_DEPTH:
        raise Unusable(f"{at_p}.siblings: more than {MAX_INDEX_DEPTH} hashes")
    siblings = []
    for h in p["siblings"]:
        siblings.append(_b64(h, f"{at_p}.siblings"))
        if len(siblings[-1]) != 32: raise Unusable(f"{at_p}.siblings: a hash is not 32 bytes")
    identifier = _text(v["identifier"], f"{at}.identifier")
    vrf_proof = _b64(v["vrf_proof"], f"{at}.vrf_proof")
    t, at_t = p["terminal"], at_p + ".terminal"
    if isinstance(t, dict):
        _only(t, ("label", "count", "acc"), at_t + ".")
        t = (_hex(t["label"], f"{at_t}.label"), _uint(t["count"], f"{at_t}.count"),
             _hex(t["acc"], f"{at_t}.acc"))
    elif t is not None:
        raise Unusable(f"{at_t}: not null or an object")
    return identifier, vrf_proof, leaves, siblings, t

def read_record(raw):
    """The index record (the record row's raw message): JSON with exactly index (the index
    format), seq, tree_size, root (64 lowercase hex), labels and vrf_key (base64 of 32 bytes).
    Returns (seq, tree_size, root, vrf_key)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Rejected("its raw message is not UTF-8")
    try:
        o = load_json(text, unique=True)
    except (ValueError, RecursionError):
        o = None
    if not isinstance(o, dict): raise Rejected("its raw message is not a JSON object")
    keys = ("index", "seq", "tree_size", "root", "labels", "vrf_key")
    for k in o:
        if k not in keys: raise Rejected(f"its record: {k}: not a key of an index record")
    for k in keys:
        if k not in o: raise Rejected(f"its record: {k}: missing")
    if o["index"] != INDEX: raise Rejected(f"its record is not of the format {INDEX}")
    if not isinstance(o["root"], str) or not re.fullmatch("[0-9a-f]{64}", o["root"]):
        raise Rejected("its record's root is not 64 lowercase hex digits")
    try:
        key = b64(o["vrf_key"], "vrf_key") if isinstance(o["vrf_key"], str) else b""
    except Rejected:
        key = b""
    if len(key) != 32: raise Rejected("its record's vrf_key is not the base64 of 32 bytes")
    def n(k):
        v = o[k]
        if not isinstance(v, Int) or v.is_signed() or v > U64:
            raise Rejected(f"its record: {k}: not an integer from 0 to {U64}")
        return int(v)
    seq, size, _ = n("seq"), n("tree_size"), n("labels")
    return seq, size, bytes.fromhex(o["root"]), key

def bit(label, depth):
    """The bit of `label` at `depth` (0: the most significant bit of byte 0)."""
    return label[depth // 8] >> (7 - depth % 8) & 1

def fold(leaves):
    """The value of exactly these leaves ((leaf index, row hash), in log order): (count, acc)."""
    acc = EMPTY
    for i, h in leaves:
        acc = sha256(b"\x02", acc, i.to_bytes(8, "big"), h)
    return len(leaves), acc

def index_verify(root, label, siblings, terminal):
    """What the proof shows `label` maps to under `root`: (count, acc), or None (nothing). The
    shape allows at most 256 siblings, a label's bits."""
    depth, found = len(siblings), None
    if terminal is None:
        h = EMPTY
    else:
        other, count, acc = terminal
        if any(bit(other, d) != bit(label, d) for d in range(depth)):
            raise Rejected("its index proof: the proof ends at another label that does not share "
                           f"the path's first {depth} bits")
        h = sha256(b"\x00", other, count.to_bytes(8, "big"), acc)
        if other == label: found = (count, acc)
    for d in reversed(range(depth)):
        h = sha256(b"\x01", siblings[d], h) if bit(label, d) else sha256(b"\x01", h, siblings[d])
    if h != root: raise Rejected("its index proof: the proof does not lead to the index root")
    return found

def check_claim(root, label, siblings, terminal, leaves, size):
    """The index of `root`, covering the log's leaves [0, size), maps `label` to exactly
    `leaves` ((leaf index, row hash), ascending): none when the proof shows the label absent."""
    for a, b in zip(leaves, leaves[1:]):
        if a[0] >= b[0]:
            raise Rejected("its leaves are not listed in ascending order without repeats "
                           f"(at leaf {b[0]})")
    for n, _ in leaves:
        if n >= size: raise Rejected(f"leaf {n} is not below the index's size {size}")
    indexed, listed = index_verify(root, label, siblings, terminal) or (0, EMPTY), fold(leaves)
    if indexed[0] != listed[0]:
        raise Rejected(f"the index holds {indexed[0]} leaves for it, the bundle lists {listed[0]}")
    if indexed != listed:
        raise Rejected("the leaves listed are not the ones the index holds (their fold differs)")

def links(e):
    """The identifiers an entry links the person to, as (field, value): the two numbers of a
    data_import.import_process.* event of resource_type account, from its shown columns."""
    t, p = e["columns"].get("event_type"), e["columns"].get("payload")
    if not (isinstance(t, str) and isinstance(p, dict) and t.startswith(LINK_EVENTS)
            and p.get("resource_type") == "account"):
        return []
    return [(f, p[f]) for f in LINK_FIELDS if isinstance(p.get(f), str) and p[f] != ""]

def check_completeness(c, entries, size, root):
    """The record entry checked as an entry is and read as an index record, then every claim
    against it and the bundle's (checked) entries, in the Rust checker's order. Returns what
    it proved, as `verify-proof` reports it."""
    r = c["record"]
    def not_a_record(why):
        if r["stream"] != RECORD_STREAM:
            why = (f"its stream is {quoted(r['stream'])}, not the index records' "
                   f"{quoted(RECORD_STREAM)}")
        return Rejected(f"the index record's row: {why}")
    try:
        check_entry(r, size, root)
        seq, through, index_root, vrf_key = read_record(b64(r["raw"], "raw"))
    except Rejected as why:
        raise not_a_record(why)
    if r["stream"] != RECORD_STREAM: raise not_a_record("")
    record_leaf = int(r["leaf_index"])
    if through > record_leaf:
        raise Rejected(f"the index record's row: it claims an index of {through} leaves, beyond "
                       f"its own leaf {record_leaf}")
    ids = [a[0] for a in c["claims"]]
    for i, x in enumerate(ids):
        if x in ids[:i]: raise Rejected(f"identifiers {ids.index(x)} and {i} are the same")
    by_leaf = {}  # leaf index -> (entry number, row hash)
    for i, e in enumerate(entries):
        n = int(e["leaf_index"])
        if n in by_leaf: raise Rejected(f"entries {by_leaf[n][0]} and {i} are the same leaf")
        by_leaf[n] = (i, bytes.fromhex(e["row_hash"]))
    covered = set()
    for i, (identifier, vrf_proof, leaves, siblings, terminal) in enumerate(c["claims"]):
        beta = ecvrf_verify(vrf_key, ALPHA_PREFIX + identifier.encode(), vrf_proof)
        if beta is None:
            raise Rejected(f"identifier {i}: its VRF proof does not verify under the index key the "
                           "record names (not this identifier's label)")
        for n in leaves:
            if n not in by_leaf:
                raise Rejected(f"leaf {n} is one the index holds for identifier {i}, and the "
                               "bundle has no entry for it: a row left out")
        covered.update(leaves)
        try:
            check_claim(index_root, beta[:32], siblings, terminal,
                        [(n, by_leaf[n][1]) for n in leaves], through)
        except Rejected as why:
            raise Rejected(f"identifier {i}: {why}")
    for i, e in enumerate(entries):
        if int(e["leaf_index"]) not in covered:
            raise Rejected(f"entry {i} (leaf {int(e['leaf_index'])}) is not among the leaves the "
                           "index holds for the identifiers: a row added")
        for field, value in links(e):
            if value not in ids:
                raise Rejected(f"entry {i} links the person to an identifier the bundle does not "
                               f"prove complete (its {field})")
    return {"index": INDEX, "update": seq, "record_leaf": record_leaf, "through": through,
            "identifiers": len(ids), "rows": len(entries)}

# --- C2SP tlog-proof ----------------------------------------------------------------------

TLOG_PROOF = "c2sp.org/tlog-proof@v1"

def read_tlog_proof(text):
    """A c2sp.org/tlog-proof@v1 text -> (extra, index, proof hashes, checkpoint note), each line
    as the spec writes it (anything else is unusable input)."""
    err = lambda why: Unusable(f"not a usable tlog-proof: {why}")
    if not text.startswith(TLOG_PROOF + "\n"):
        raise err("not a tlog-proof: the first line is not `c2sp.org/tlog-proof@v1`")
    rest = text[len(TLOG_PROOF) + 1 :]
    def line():
        nonlocal rest
        l, nl, rest = rest.partition("\n")
        if not nl: raise err("no empty line and checkpoint after the proof hashes")
        if any(c < " " for c in l): raise err("a line holds a control character")
        return l
    l, extra = line(), None
    if l.startswith("extra"):
        if not l.startswith("extra "): raise err("the line `extra` is not followed by a space")
        extra, l = b64(l[6:], "the extra line", err), line()
    index = l[6:] if l.startswith("index ") else ""
    if not DECIMAL.fullmatch(index) or int(index) > U64:
        raise err("no line `index <N>` (a decimal leaf index without leading zeros) after the header")
    hashes = []
    while (l := line()) != "":
        if len(hashes) == 64: raise err("more than 64 proof hashes")
        h = b64(l, f"proof hash {len(hashes) + 1}", err)
        if len(h) != 32: raise err(f"proof hash {len(hashes) + 1} is not 32 bytes")
        hashes.append(h)
    if rest == "": raise err("no empty line and checkpoint after the proof hashes")
    return extra, int(index), hashes, rest

def check_tlog_proof(text, key, entry, origin, policy):
    """The spec's verification steps; step 1 this log's: the entry is a row hash, the leaf
    SHA-256(0x00 || entry). Returns (origin, size, index, cosigned by)."""
    extra, index, hashes, note = read_tlog_proof(text)
    if entry is None or not re.fullmatch("[0-9a-fA-F]{64}", entry):
        raise Unusable("a tlog-proof proves one entry: give --entry HEX (the row's row hash, 64 hex digits)")
    want = key[0] if origin is None else origin
    got = note.split("\n", 1)[0]
    if got != want:
        raise Rejected(f"step 2 (checkpoint origin): the checkpoint is of log {got}, not {want}")
    try:
        ctext, sigs, (_, size, root) = open_checkpoint(note, key)
    except Rejected as r:
        raise Rejected(f"step 2 (log signature): {str(r).split(': ', 1)[1]}")
    try:
        by = cosigned(ctext, sigs, policy) if policy else None
    except Rejected as r:
        raise Rejected(f"step 3 (cosignatures): {str(r).split(': ', 1)[1]}")
    if inclusion_root(index, size, sha256(b"\x00", bytes.fromhex(entry)), hashes) != root:
        raise Rejected(f"step 4 (inclusion proof): the entry at index {index} does not lead to the "
                       f"signed root of tree size {size}")
    return got, size, index, by

def read_text(path):
    data = sys.stdin.buffer.read() if path == "-" else open(path, "rb").read()
    return data.decode("utf-8")

def main():
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4000))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundle")
    ap.add_argument("--public-key", required=True)
    ap.add_argument("--origin", help="the log the checkpoint must be of")
    ap.add_argument("--witness-policy", help="a C2SP tlog-policy file (or the format read before it)")
    ap.add_argument("--entry", help="for a C2SP tlog-proof: the entry it proves, the row hash (hex)")
    a = ap.parse_args()
    try:
        key = vkey(read_text(a.public_key).strip(WS), 0x01, lambda why: Unusable(f"the public key: {why}"))
        policy = read_policy(read_text(a.witness_policy)) if a.witness_policy else None
        if policy: check_log(policy, key)
        text = read_text(a.bundle)
        if a.entry is not None or text.split("\n", 1)[0] == TLOG_PROOF:
            return tlog_proof_main(text, key, a, policy)
        try:
            bundle = shape(load_json(text, unique=True))
        except (ValueError, RecursionError) as e:
            raise Unusable(f"not JSON: {e}")
    except (OSError, UnicodeDecodeError, Unusable) as e:
        print(f"UNUSABLE: {e}", file=sys.stderr)
        return 2
    try:
        text, sigs, (origin, size, root) = open_checkpoint(bundle["checkpoint"], key)
        if a.origin is not None and origin != a.origin:
            raise Rejected(f"checkpoint origin: the checkpoint is of log {origin}, not {a.origin}")
        by = cosigned(text, sigs, policy) if policy else None
        for i, e in enumerate(bundle["entries"]):
            try:
                check_entry(e, size, root)
            except Rejected as r:
                raise Rejected(f"entry {i} (stream {e['stream']} seq {e['stream_seq']}): {r}")
        complete = None
        if "completeness" in bundle:
            try:
                complete = check_completeness(bundle["completeness"], bundle["entries"], size, root)
            except Rejected as r:
                raise Rejected(f"completeness: {r}")
    except Rejected as e:
        print(f"REJECTED: {e}", file=sys.stderr)
        return 1
    n = len(bundle["entries"])
    # What verify-proof prints on stdout, its keys in the same order.
    proven = {"format": bundle["format"], "origin": origin, "tree_size": size, "entries": n}
    if by is not None: proven["cosigned_by"] = by
    if complete is not None: proven["complete"] = complete
    print(json.dumps(proven, ensure_ascii=False, separators=(",", ":")))
    print(f"OK: {n} entr{'y' if n == 1 else 'ies'} proven against {origin} at tree size {size}"
          + (f", cosigned by {', '.join(by)}" if by is not None else ""), file=sys.stderr)
    if complete is not None:
        print(f"complete: every row about its {complete['identifiers']} identifier(s) among the log's "
              f"first {complete['through']} leaves is here (account index update {complete['update']}, "
              f"recorded at leaf {complete['record_leaf']})", file=sys.stderr)
    return 0

def tlog_proof_main(text, key, a, policy):
    try:
        origin, size, index, by = check_tlog_proof(text, key, a.entry, a.origin, policy)
    except Unusable as e:
        print(f"UNUSABLE: {e}", file=sys.stderr)
        return 2
    except Rejected as e:
        print(f"REJECTED: {e}", file=sys.stderr)
        return 1
    print(f"OK: entry {a.entry.lower()} proven at index {index} against {origin} at tree size {size}"
          + (f", cosigned by {', '.join(by)}" if by is not None else ""))
    return 0

if __name__ == "__main__":
    sys.exit(main())
