#!/usr/bin/env python3
"""Inputs for the `decode` and `settings` targets made from what defines them: every field of
every event version (the catalogue, as `event-audit catalogue list --format json` states it:
fuzz/catalogue.py), and every setting (the settings seed that holds every one),
wrong in each way their readers check, one at a time.

The `seed-event-*` seeds (tests/it/fuzz_corpus/seeds.rs) hold one valid message per event
version; a byte-level
mutator rarely turns one of them into "this field, three levels down, is a string where an
integer belongs", and each such case is an edge of its own in the generated decoder of that
version (the fourth round's `decode` runs were still finding them after 40 minutes). For every
event version this writes: a message with every field (optional ones too, shapes filled, arrays
of two elements); then, for every field path (into shapes, and both elements of arrays, so that
an error comes with an element already read), the field missing, `null`, each other value of
each JSON type as each branch of the reader meets it (`WRONG`), the two errors a decoder meets
inside well-formed JSON, alone and inside an object and an array (`IN_TEXT_ERRORS`), and for
integers a fraction and a number past i64; each array empty; and at each object level an unknown
field, a duplicate one and the first key written with an escape (`object_edits`). Native
envelope, with one CloudEvents and one EventBridge message per version. `fuzz/corpus.sh make`
merges them (`-merge=1`) with the committed seeds into the corpus a long run starts from; only
what adds coverage is kept. The stable suite replays all of them.

For `settings`, from the settings seed with every setting (`seed-every-setting`, made by the
stable suite from `Settings::default()` and the optional settings the command line names): each
key's value replaced by each other TOML type, by an empty, zero, negative, huge or malformed
value (durations, URLs, addresses), each key removed, each section alone and each section given
as a value instead of a table; a file per edit, the rest of the settings around it.

    python3 fuzz/structured_inputs.py decode OUT_DIR
    python3 fuzz/structured_inputs.py settings OUT_DIR
    python3 fuzz/structured_inputs.py decode-full OUT_DIR

`decode-full` writes only the first of each version's messages (every field, native envelope):
the seeds of `fuzz/neighbours.py` for the optional fields the seeds leave out.

The catalogue comes from the binary (fuzz/catalogue.py: `$EVENT_AUDIT_BIN`, else `cargo run`).
"""
import copy
import hashlib
import json
import pathlib
import re
import sys

import catalogue

ROOT = pathlib.Path(__file__).resolve().parent.parent
SETTINGS_SEED = ROOT / "fuzz" / "seeds" / "settings" / "seed-every-setting"


def load():
    """The event versions (each with its fields, extends and field sets expanded) and the shapes
    by name."""
    cat = catalogue.load()
    return cat["events"], {s["name"]: s for s in cat["shapes"]}


def sample(ty, shapes):
    """A valid value of catalogue type `ty`, every optional field present."""
    if ty.startswith("[") and ty.endswith("]"):
        return [sample(ty[1:-1], shapes) for _ in range(2)]
    scalar = {"string": "s-1", "integer": 7, "number": 1.5, "boolean": True, "object": {"k": 1}}
    if ty in scalar:
        return copy.deepcopy(scalar[ty])
    shape = shapes[ty]
    return {f["name"]: sample(f["type"], shapes) for f in shape.get("fields", [])}


# Each JSON type, each way a branch of serde_json's reader meets it: a string as it stands and
# with an escape (read into a copy), a number positive and negative (`visit_u64`, `visit_i64`,
# `visit_f64`), both booleans. A field is given each of them but its own value.
WRONG = ["s-x", "\u00e9", 3, -3, 2.5, -2.5, True, False, None, [], {}]
BAD_INTEGERS = [1.0, 0.5, 9223372036854775808, -9223372036854775809, 1e3]


def edits(value, ty, shapes, out):
    """Appends (container, key, replacement) for every wrong version of `value`: each value
    of `WRONG` but its own, each of `IN_TEXT_ERRORS`, for integers fractions and numbers past
    i64, and inside objects `object_edits`, each field missing, and each field's own edits; inside
    arrays, each element's edits, one element more, and the array empty. `DELETE` as
    replacement removes the key."""
    container, key = value
    v = container[key]
    for w in WRONG:
        if type(w) is not type(v) or w != v:
            out.append((container, key, w))
    out += [(container, key, w) for w in IN_TEXT_ERRORS]
    # The field null, of another type, or empty, and an error after it: its slot is dropped in
    # each state it can hold (filled, it is dropped by `object_edits`' lone-surrogate key).
    empty = [type(v)()] if isinstance(v, (list, dict)) else []
    out += [(container, key, ThenError(w)) for w in [None, 3 if isinstance(v, str) else "s-x"]
            + empty]
    if ty == "integer":
        out += [(container, key, w) for w in BAD_INTEGERS]
    if isinstance(v, dict):
        out += object_edits(v)
        for f in shapes.get(ty, {}).get("fields", []):
            if f["name"] in v:
                out.append((v, f["name"], DELETE))
                edits((v, f["name"]), f["type"], shapes, out)
    if isinstance(v, list) and v:
        for i in range(len(v)):
            edits((v, i), ty[1:-1], shapes, out)
        out += [(v, len(v), v[0]), (container, key, [])]


DELETE = object()


class ThenError:
    """An edit's value, and a lone surrogate after it in the same object or array (an unknown
    key at the object's end, an element at the array's)."""

    def __init__(self, value):
        self.value = value

# Stand-ins that `text()` turns into what a dict cannot hold: a key given twice, and a value
# that breaks the JSON text where it stands (so the reader stops with the object's earlier
# fields already read).
DUPLICATE = "\0duplicate:"
BROKEN = "\0broken"
# A string the envelope's reader skips over and the decoder cannot read (`"\ud800"`, half of a
# UTF-16 pair): an error that reaches a generated decoder from inside valid-looking JSON.
LONE_SURROGATE = "\ud800"
# A number past f64 (`1e400`, `-1e400`): skipped like any number by the envelope's reader,
# refused by the decoder's. With the lone surrogate, the errors of serde_json's reader found to
# pass the envelope's; each also given inside an object and an array.
OVERFLOW = "\0overflow"
NEG_OVERFLOW = "\0-overflow"
IN_TEXT_ERRORS = [LONE_SURROGATE, OVERFLOW, NEG_OVERFLOW, {LONE_SURROGATE: 1}, {"k": OVERFLOW},
                  [LONE_SURROGATE], [OVERFLOW]]
# A key written with an escape (`"\u0061ccount_number"`): the same field, read into a copy.
ESCAPED = "\0escaped:"
ESCAPE_KEY = object()


def object_edits(obj):
    """An unknown field (with a value, with a broken one, with each of `IN_TEXT_ERRORS`, and
    named by a lone surrogate); the object's first field given again at its end (with its value,
    and with a broken one), and its key written with an escape. (A broken value of each field,
    or a key that is not a string, added no edge to these: the envelope's reader refuses the
    message before a decoder sees it.)"""
    out = [(obj, "zz_unknown_field", 1), (obj, "zz_unknown_field", BROKEN),
           (obj, LONE_SURROGATE, 1)]
    out += [(obj, "zz_unknown_field", w) for w in IN_TEXT_ERRORS]
    if obj:
        first = next(iter(obj))
        out += [(obj, DUPLICATE + first, copy.deepcopy(obj[first])),
                (obj, DUPLICATE + first, BROKEN), (obj, first, ESCAPE_KEY)]
    return out


def text(msg):
    """A message's compact JSON text, with the stand-ins above made real."""
    out = json.dumps(msg, separators=(",", ":"))
    out = out.replace(json.dumps(BROKEN), "[1,}").replace(json.dumps(OVERFLOW), "1e400")
    out = out.replace(json.dumps(NEG_OVERFLOW), "-1e400")
    out = re.sub(r'"\\u0000escaped:(.)', lambda m: '"\\u%04x' % ord(m.group(1)), out)
    return re.sub(r'"\\u0000duplicate:([^"]*)"', r'"\1"', out)


def restore(obj):
    """How to put an object's keys back, in their order, after they were renamed or removed."""
    items = list(obj.items())
    return lambda: (obj.clear(), obj.update(items))


def apply(container, key, w):
    """Makes the edit; returns how to undo it."""
    if isinstance(w, ThenError):
        undo = apply(container, key, w.value)
        after = apply(container, len(container) if isinstance(container, list) else
                      LONE_SURROGATE, LONE_SURROGATE)
        return lambda: (after(), undo())
    if w is ESCAPE_KEY:
        undo = restore(container)
        renamed = [(ESCAPED + k if k == key else k, v) for k, v in container.items()]
        container.clear()
        container.update(renamed)
        return undo
    if w is DELETE:
        undo = restore(container)
        del container[key]
        return undo
    if isinstance(container, list) and key == len(container):
        container.append(w)
        return container.pop
    if isinstance(container, dict) and key not in container:
        container[key] = w
        return lambda: container.pop(key)
    saved = container[key]
    container[key] = w
    return lambda: container.__setitem__(key, saved)


def messages(ev, fields, shapes):
    """Every message of one event version: the full one in each envelope, then each edit."""
    payload = {f["name"]: sample(f["type"], shapes) for f in fields}
    name, time = ev["name"], "2026-01-05T09:00:00Z"
    native = lambda p: {"event": name, "id": "id-1", "time": time, "payload": p}
    yield native(payload)
    yield {"specversion": "1.0", "type": name, "source": "/s", "id": "id-1", "time": time,
           "data": payload}
    yield {"detail-type": name, "id": "id-1", "time": time, "source": "s", "detail": payload}
    out = object_edits(payload)
    for f in fields:
        out.append((payload, f["name"], DELETE))
        edits((payload, f["name"]), f["type"], shapes, out)
    for container, key, w in out:
        undo = apply(container, key, w)
        yield native(copy.deepcopy(payload))
        undo()


def decode_inputs(full_only=False):
    events, shapes = load()
    for ev in events:
        for msg in messages(ev, ev["fields"], shapes):
            yield text(msg).encode()
            if full_only:
                break


SETTING_VALUES = ['""', "0", "-1", "1", "18446744073709551616", "0.5", "-0.5", "1e308", "nan",
                  "true", "[]", '["x"]', "{}", '"0s"', '"1ns"', '"-5s"', '"999999999999d"',
                  '"10 s"', '"1h30m"', '"x"', '"postgres://u:p@h:1/d"', '"postgres://h/d?sslmode=x"',
                  '"nats://u:p@h:4222"', '"http://[::1]:80"', '"127.0.0.1:99999"', '"a b"',
                  '"\u0000"']


def settings_inputs():
    lines = SETTINGS_SEED.read_text().splitlines()
    keyed = [i for i, l in enumerate(lines) if "=" in l and not l.startswith("[")]
    for i in keyed:
        key = lines[i].split("=", 1)[0].strip()
        for v in SETTING_VALUES:
            yield "\n".join(lines[:i] + [f"{key} = {v}"] + lines[i + 1:]).encode()
        yield "\n".join(lines[:i] + lines[i + 1:]).encode()
    heads = [i for i, l in enumerate(lines) if l.startswith("[")] + [len(lines)]
    for a, b in zip(heads, heads[1:]):
        yield "\n".join(lines[a:b]).encode()
        # The section given as a value of another type, at the top of the file.
        section = lines[a].strip("[]")
        for v in SETTING_VALUES:
            yield "\n".join([f"{section} = {v}"] + lines[:a] + lines[b:]).encode()


def main() -> int:
    made = {"decode": decode_inputs, "settings": settings_inputs,
            "decode-full": lambda: decode_inputs(full_only=True)}
    if len(sys.argv) != 3 or sys.argv[1] not in made:
        print(__doc__, file=sys.stderr)
        return 2
    out = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for data in made[sys.argv[1]]():
        (out / hashlib.sha1(data).hexdigest()).write_bytes(data)
        n += 1
    print(f"{n} inputs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
