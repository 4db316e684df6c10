#!/usr/bin/env python3
"""Inputs for the `decode` and `settings` targets made from what defines them: every field of
every event version (catalogue/), and every setting (the settings seed that holds every one),
wrong in each way their readers check, one at a time.

The committed `seed-event-*` inputs hold one valid message per event version; a byte-level
mutator rarely turns one of them into "this field, three levels down, is a string where an
integer belongs", and each such case is an edge of its own in the generated decoder of that
version (the fourth round's `decode` runs were still finding them after 40 minutes). For every
event version this writes: a message with every field (optional ones too, shapes filled); then,
for every field path (into shapes, and the first element of arrays), the field missing, `null`,
of each other JSON type, and for integers a fraction and a number past i64; and an unknown field
at each object level. Native envelope, with one CloudEvents and one EventBridge message per
version. Feed the directory to a run (or a `-merge=1`) beside the committed corpus; only what
adds coverage is kept.

For `settings`, from the settings seed with every setting (`seed-every-setting`, made by the
stable suite from `Settings::default()` and the optional settings the command line names): each
key's value replaced by each other TOML type, by an empty, zero, negative, huge or malformed
value (durations, URLs, addresses), each key removed, each section alone and each section given
as a value instead of a table; a file per edit, the rest of the settings around it.

    python3 fuzz/structured_inputs.py decode OUT_DIR
    python3 fuzz/structured_inputs.py settings OUT_DIR
    python3 fuzz/structured_inputs.py decode-full OUT_DIR

`decode-full` writes only the first of each version's messages (every field, native envelope):
the seeds of `fuzz/neighbours.py` for the optional fields the committed seeds leave out.
"""
import copy
import hashlib
import json
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def load():
    read = lambda f: tomllib.loads((ROOT / "catalogue" / f).read_text(encoding="utf-8"))
    events = read("events.toml")["event"]
    shapes = {s["name"]: s for s in read("shapes.toml")["shape"]}
    sets = {s["name"]: s for s in read("field_sets.toml")["field_set"]}
    return events, shapes, sets


def set_fields(name, sets):
    s = sets[name]
    out = []
    for inc in s.get("include", []):
        out += set_fields(inc, sets)
    return out + s.get("fields", [])


def event_fields(ev, by_name, sets):
    out = []
    if "extends" in ev:
        out += event_fields(by_name[ev["extends"]], by_name, sets)
    for inc in ev.get("include", []):
        out += set_fields(inc, sets)
    return out + ev.get("fields", [])


def sample(ty, shapes):
    """A valid value of catalogue type `ty`, every optional field present."""
    if ty.startswith("[") and ty.endswith("]"):
        return [sample(ty[1:-1], shapes)]
    scalar = {"string": "s-1", "integer": 7, "number": 1.5, "boolean": True, "object": {"k": 1}}
    if ty in scalar:
        return copy.deepcopy(scalar[ty])
    shape = shapes[ty]
    return {f["name"]: sample(f["type"], shapes) for f in shape.get("fields", [])}


WRONG = ["s-x", 3, 2.5, False, None, [], {}]
BAD_INTEGERS = [1.0, 0.5, 9223372036854775808, -9223372036854775809, 1e3]


def edits(value, ty, shapes, out):
    """Appends (container, key, replacement) for every wrong version of `value`:
    each other JSON type, a lone surrogate, for integers fractions and numbers past i64, and
    inside objects `object_edits`, each field missing, and each field's own edits; inside
    arrays, the first element's edits and one element more. `DELETE` as replacement removes the key."""
    container, key = value
    v = container[key]
    for w in WRONG:
        if type(w) is not type(v):
            out.append((container, key, w))
    out.append((container, key, LONE_SURROGATE))
    if ty == "integer":
        out += [(container, key, w) for w in BAD_INTEGERS]
    if isinstance(v, dict):
        out += object_edits(v)
        for f in shapes.get(ty, {}).get("fields", []):
            if f["name"] in v:
                out.append((v, f["name"], DELETE))
                edits((v, f["name"]), f["type"], shapes, out)
    if isinstance(v, list) and v:
        edits((v, 0), ty[1:-1], shapes, out)
        out.append((v, len(v), v[0]))


DELETE = object()

# Stand-ins that `text()` turns into what a dict cannot hold: a key given twice, and a value
# that breaks the JSON text where it stands (so the reader stops with the object's earlier
# fields already read).
DUPLICATE = "\0duplicate:"
BROKEN = "\0broken"
# A string the envelope's reader skips over and the decoder cannot read (`"\ud800"`, half of a
# UTF-16 pair): the one error that reaches a generated decoder from inside valid-looking JSON.
LONE_SURROGATE = "\ud800"


def object_edits(obj):
    """An unknown field (with a value, with a broken one, and named by a lone surrogate); the
    object's first field given again at its end (with its value, and with a broken one). (A
    broken value of each field, or a key that is not a string, added no edge to these: the
    envelope's reader refuses the message before a decoder sees it.)"""
    out = [(obj, "zz_unknown_field", 1), (obj, "zz_unknown_field", BROKEN),
           (obj, LONE_SURROGATE, 1)]
    if obj:
        first = next(iter(obj))
        out += [(obj, DUPLICATE + first, copy.deepcopy(obj[first])),
                (obj, DUPLICATE + first, BROKEN)]
    return out


def text(msg):
    """A message's compact JSON text, with the stand-ins above made real."""
    out = json.dumps(msg, separators=(",", ":"))
    out = out.replace(json.dumps(BROKEN), "[1,}")
    return re.sub(r'"\\u0000duplicate:([^"]*)"', r'"\1"', out)


def apply(container, key, w):
    """Makes the edit; returns how to undo it."""
    if w is DELETE:
        items = list(container.items())
        del container[key]
        return lambda: (container.clear(), container.update(items))
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
    events, shapes, sets = load()
    by_name = {e["name"]: e for e in events}
    for ev in events:
        fields = event_fields(ev, by_name, sets)
        for msg in messages(ev, fields, shapes):
            yield text(msg).encode()
            if full_only:
                break


SETTING_VALUES = ['""', "0", "-1", "1", "18446744073709551616", "0.5", "-0.5", "1e308", "nan",
                  "true", "[]", '["x"]', "{}", '"0s"', '"1ns"', '"-5s"', '"999999999999d"',
                  '"10 s"', '"1h30m"', '"x"', '"postgres://u:p@h:1/d"', '"postgres://h/d?sslmode=x"',
                  '"nats://u:p@h:4222"', '"http://[::1]:80"', '"127.0.0.1:99999"', '"a b"',
                  '"\u0000"']


def settings_inputs():
    lines = (ROOT / "fuzz" / "corpus" / "settings" / "seed-every-setting").read_text().splitlines()
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
