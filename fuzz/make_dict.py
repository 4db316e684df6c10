#!/usr/bin/env python3
"""libFuzzer dictionaries for the `decode` and `settings` targets, made from what defines them.

`decode.dict`, from the catalogue as the binary states it (`event-audit catalogue list --format
json`, fuzz/catalogue.py: `$EVENT_AUDIT_BIN`, else `cargo run`): every event name and its type
without the version, every field name (of every event version and every shape) as a JSON key,
the envelope keys and JSON's literals.
`settings.dict`, from the settings seed with every setting (the defaults and the optional ones):
each section header and key, and the pieces of URLs and durations. These are the tokens a
mutation can hardly find byte by byte, so that the fuzzer reaches each event version's checks,
or each setting's validation, instead of stopping at "unknown type" or "unknown key".

    python3 fuzz/make_dict.py            # writes fuzz/dict/*.dict
    python3 fuzz/make_dict.py --check    # exit 1 if a committed file is not what it makes
"""
import pathlib
import sys

import catalogue

ROOT = pathlib.Path(__file__).resolve().parent.parent
DICTS = ROOT / "fuzz" / "dict"
SETTINGS_SEED = ROOT / "fuzz" / "seeds" / "settings" / "seed-every-setting"

# The top-level keys of the envelopes `decode::envelope` reads, and what CloudEvents adds.
ENVELOPE_KEYS = [
    "specversion", "type", "source", "id", "time", "datacontenttype", "data",
    "detail-type", "detail", "resources", "region", "account",
    "event", "payload",
]
LITERALS = ["true", "false", "null", "{}", "[]", '"1.0"', "-0", "1e400", '"\\u0000"']

# The pieces of the values settings validate: URL schemes and parts, duration units, TOML forms.
SETTINGS_PIECES = [
    "postgres://", "postgresql://", "nats://", "tls://", "http://", "https://", "@", ":5432",
    "127.0.0.1", "[::1]", "?", "%40", "ms", "s", "m", "h", "d", "= true", "= false", "= []",
    '= ""', "= 0", "= -1", "= 1e9", "= inf", "= nan", "'" * 3, '"' * 3, "[[", "]]",
]


def escape(token: str) -> str:
    """libFuzzer's dictionary syntax: printable ASCII as is, `"` and `\\` escaped, the rest \\xNN."""
    out = []
    for b in token.encode("utf-8"):
        c = chr(b)
        if c in '"\\':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\x{b:02X}")
    return '"' + "".join(out) + '"'


def decode_tokens() -> list[str]:
    cat = catalogue.load()
    names = {e["name"] for e in cat["events"]}
    fields = {f["name"] for item in cat["events"] + cat["shapes"] for f in item["fields"]}
    out = []
    for name in sorted(names):
        base, _, version = name.rpartition("-")
        out += [f'"{name}"', f'"{base}"', version]
    out += [f'"{f}":' for f in sorted(fields)]
    out += [f'"{k}":' for k in ENVELOPE_KEYS]
    return out + LITERALS


def settings_tokens() -> list[str]:
    out = []
    for line in SETTINGS_SEED.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("["):
            out.append(line)
        elif "=" in line:
            out.append(line.split("=", 1)[0].strip() + " =")
    return out + SETTINGS_PIECES


def render(tokens: list[str], source: str) -> str:
    unique = list(dict.fromkeys(tokens))
    head = f"# Made by fuzz/make_dict.py from {source}; do not edit.\n"
    return head + "".join(f"{escape(t)}\n" for t in unique)


def main() -> int:
    made = {
        DICTS / "decode.dict": render(decode_tokens(), "catalogue/"),
        DICTS / "settings.dict": render(settings_tokens(), "fuzz/seeds/settings/seed-every-setting"),
    }
    if sys.argv[1:] == ["--check"]:
        stale = [p for p, text in made.items()
                 if not p.exists() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"{p.relative_to(ROOT)} is not what fuzz/make_dict.py makes; "
                  "run python3 fuzz/make_dict.py", file=sys.stderr)
        return 1 if stale else 0
    DICTS.mkdir(parents=True, exist_ok=True)
    for p, text in made.items():
        p.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
