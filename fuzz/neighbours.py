#!/usr/bin/env python3
"""Every input one edit away from a target's seeds: the deterministic stage libFuzzer lacks.

AFL walks each new input byte by byte before it mutates at random (flips, deletions, known
values at every offset); libFuzzer only mutates at random. For `decode` that matters: serde_json's
reader is inlined into every generated decoder, so "end of input right after this key's colon"
in one event version is an edge of its own, which random mutation finds late. This writes, for
every committed `seed-*` input of one target (`fuzz/seeds/<target>/`): the seed cut at every offset, every byte deleted,
every byte replaced by each of a few structural bytes, and a few bytes inserted at every offset.
Load the directory beside the corpus with `-runs=0 -features_dir=FEAT` and keep the inputs whose
names appear in FEAT: only what adds coverage (libFuzzer's `-merge=1` does the same about ten
times slower here; docs/fuzzing-history.md, the sixth round).

    python3 fuzz/neighbours.py TARGET|DIR OUT_DIR [K/N | SEED] [--sample N]

The seeds are TARGET's committed `seed-*` inputs, or every file in DIR (a path with a `/`, such
as what `fuzz/structured_inputs.py decode-full` writes). K/N writes the K-th of N slices of the
seeds (0-based), to keep a directory to ~100,000 files; SEED (a file name) only that seed's
neighbours. `--sample N` writes at most N of them, every k-th of the walk (the stable suite's
bounded run).
"""
import hashlib
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Bytes that change the state of the readers fuzzed here (JSON, TOML, the archive's lines,
# notes): quotes, escapes, separators, brackets, whitespace, digits and number parts, a NUL and
# a byte that is not UTF-8.
REPLACE = b'"\\,:{}[] \n\t09-+.exn=#\'\x00\x80'
INSERT = b' ,"\\}]\n'


def neighbours(data: bytes):
    for i in range(len(data) + 1):
        yield data[:i]
        for b in INSERT:
            yield data[:i] + bytes([b]) + data[i:]
        if i == len(data):
            break
        yield data[:i] + data[i + 1:]
        for b in REPLACE:
            if data[i] != b:
                yield data[:i] + bytes([b]) + data[i + 1:]


def main() -> int:
    args, sample = sys.argv[1:], None
    if len(args) >= 2 and args[-2] == "--sample":
        args, sample = args[:-2], int(args[-1])
    if len(args) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    if "/" in args[0]:
        where = pathlib.Path(args[0])
        seeds = sorted(f for f in where.iterdir() if f.is_file())
    else:
        where = ROOT / "fuzz" / "seeds" / args[0]
        seeds = sorted(where.glob("seed-*"))
    if not seeds:
        print(f"no seeds in {where}", file=sys.stderr)
        return 2
    pick = args[2] if len(args) == 3 else "0/1"
    if "/" in pick:
        k, n = (int(x) for x in pick.split("/"))
        seeds = seeds[k::n]
    else:
        seeds = [s for s in seeds if s.name == pick]
        if not seeds:
            print(f"no seed {pick} in {where}", file=sys.stderr)
            return 2
    out = pathlib.Path(args[1])
    out.mkdir(parents=True, exist_ok=True)
    made = {}
    for seed in seeds:
        for data in neighbours(seed.read_bytes()):
            made.setdefault(hashlib.sha1(data).hexdigest(), data)
    step = -(-len(made) // sample) if sample else 1
    written = list(made.items())[::step]
    for name, data in written:
        (out / name).write_bytes(data)
    print(f"{len(written)} of {len(made)} inputs from {len(seeds)} seeds in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
