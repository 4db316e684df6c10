#!/usr/bin/env bash
# The fuzz corpora, kept outside git: where they live, and how they are made from what git keeps
# (fuzz/seeds/<target>/ and, for decode and settings, the structured inputs made from the
# catalogue and the settings), merged, run and measured with cargo-fuzz (nightly). Everything is
# local: nothing is downloaded. docs/fuzzing.md says more.
#
#   fuzz/corpus.sh where [TARGET]         the corpora's directory, or TARGET's corpus
#   fuzz/corpus.sh inputs TARGET DIR      writes TARGET's local inputs to DIR: its seeds, and
#                                         for decode and settings the structured inputs
#   fuzz/corpus.sh make [TARGET...]       merges (-merge=1) the corpus so far, the seeds and the
#                                         structured inputs into a minimised corpus (every target
#                                         when none is named)
#   fuzz/corpus.sh import REV [TARGET...] merges in the corpora git held under fuzz/corpus/ at
#                                         REV (the last commit that held them: 6df0db89)
#   fuzz/corpus.sh run TARGET [ARG...]    a long run from the corpus and the seeds, its finds
#                                         written to the corpus; ARGs go to libFuzzer
#   fuzz/corpus.sh cov [TARGET...]        the coverage (cov, ft) the seeds, the seeds with the
#                                         structured inputs, and the corpus reach (-runs=0)
#   fuzz/corpus.sh pick TARGET DIR [N]    of DIR's inputs, the N (10) that reach the most
#                                         coverage features together, picked greedily: each
#                                         input's features alone (-features_dir), then the one
#                                         adding the most not yet reached, until none adds any
#
# The corpora live in $EVENT_AUDIT_FUZZ_CORPUS/<target>, by default
# ${XDG_DATA_HOME:-~/.local/share}/event-audit/fuzz-corpus/<target>. $FUZZ_BUILD holds the
# cargo-fuzz build options (default `-a`: optimised, debug assertions, AddressSanitizer; for
# coverage figures `--dev -s none`, docs/fuzzing.md says why). The structured inputs need the
# event-audit binary: `$EVENT_AUDIT_BIN`, else `cargo run` builds it.
set -euo pipefail

FUZZ=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$FUZZ")
CORPORA=${EVENT_AUDIT_FUZZ_CORPUS:-${XDG_DATA_HOME:-$HOME/.local/share}/event-audit/fuzz-corpus}
read -r -a BUILD <<<"${FUZZ_BUILD:--a}"
# libFuzzer's options for every run and merge: a hang or a memory blow-up is a finding too.
LIMITS=(-timeout=10 -rss_limit_mb=2048)

die() {
    echo "corpus.sh: $*" >&2
    exit 2
}

targets() {
    local f
    for f in "$FUZZ"/fuzz_targets/*.rs; do
        basename "$f" .rs
    done
}

known() {
    [[ -f "$FUZZ/fuzz_targets/$1.rs" ]] || die "no fuzz target $1 (fuzz/fuzz_targets/)"
}

# The targets named, or all of them.
named() {
    if (($#)); then
        local t
        for t in "$@"; do
            known "$t"
            echo "$t"
        done
    else
        targets
    fi
}

# `-dict=` for a target that has a dictionary.
dict() {
    if [[ -f "$FUZZ/dict/$1.dict" ]]; then
        echo "-dict=$FUZZ/dict/$1.dict"
    fi
}

# cargo fuzz run with the build options, from fuzz/.
fuzz_run() {
    (cd "$FUZZ" && cargo +nightly fuzz run "${BUILD[@]}" "$@")
}

# TARGET's structured inputs into DIR (decode and settings only).
structured() {
    case $1 in
        decode | settings) python3 "$FUZZ/structured_inputs.py" "$1" "$2" >&2 ;;
    esac
}

inputs() {
    local target=$1 out=$2
    mkdir -p "$out"
    cp "$FUZZ/seeds/$target"/* "$out"/
    structured "$target" "$out"
}

# Merges the corpus so far and the directories given into a new, minimised corpus.
merge() {
    local target=$1 corpus=$CORPORA/$1
    shift
    mkdir -p "$corpus"
    local new
    new=$(mktemp -d "$CORPORA/.$target.merge.XXXXXX")
    local d
    d=$(dict "$target")
    # shellcheck disable=SC2086 # $d is empty or one word
    fuzz_run "$target" "$new" "$corpus" "$@" -- -merge=1 "${LIMITS[@]}" $d
    rm -rf "$corpus"
    mv "$new" "$corpus"
    echo "$target: $(find "$corpus" -type f | wc -l) inputs in $corpus" >&2
}

make_corpus() {
    local target tmp
    for target in $(named "$@"); do
        tmp=$(mktemp -d)
        structured "$target" "$tmp"
        merge "$target" "$FUZZ/seeds/$target" "$tmp"
        rm -rf "$tmp"
    done
}

import() {
    local rev=$1 target tmp
    shift
    git -C "$ROOT" rev-parse --verify -q "$rev^{commit}" >/dev/null || die "no commit $rev"
    for target in $(named "$@"); do
        tmp=$(mktemp -d)
        git -C "$ROOT" archive "$rev" "fuzz/corpus/$target" | tar -x -C "$tmp"
        merge "$target" "$FUZZ/seeds/$target" "$tmp/fuzz/corpus/$target"
        rm -rf "$tmp"
    done
}

run() {
    local target=$1
    known "$target"
    shift
    mkdir -p "$CORPORA/$target"
    local d
    d=$(dict "$target")
    # shellcheck disable=SC2086
    fuzz_run "$target" "$CORPORA/$target" "$FUZZ/seeds/$target" -- "${LIMITS[@]}" $d \
        -print_final_stats=1 "$@"
}

# `cov N ft M` of libFuzzer's load of the directories given (no mutation: -runs=0).
coverage() {
    local target=$1
    shift
    fuzz_run "$target" "$@" -- -runs=0 "${LIMITS[@]}" 2>&1 |
        sed -n 's/.*INITED cov: \([0-9]*\) ft: \([0-9]*\) corp: \([0-9]*\).*/cov \1 ft \2 (\3 inputs kept)/p' |
        tail -n 1
}

cov() {
    local target tmp empty
    for target in $(named "$@"); do
        empty=$(mktemp -d)
        echo "$target seeds ($(find "$FUZZ/seeds/$target" -type f | wc -l) files): $(coverage "$target" "$empty" "$FUZZ/seeds/$target")"
        if [[ $target == decode || $target == settings ]]; then
            tmp=$(mktemp -d)
            structured "$target" "$tmp" 2>/dev/null
            echo "$target seeds and structured inputs: $(coverage "$target" "$empty" "$FUZZ/seeds/$target" "$tmp")"
            rm -rf "$tmp"
        fi
        if [[ -d $CORPORA/$target ]]; then
            echo "$target corpus ($(find "$CORPORA/$target" -type f | wc -l) files): $(coverage "$target" "$empty" "$CORPORA/$target")"
        fi
        rm -rf "$empty"
    done
}

pick() {
    local target=$1 dir=$2 n=${3:-10} feat one f
    known "$target"
    feat=$(mktemp -d)
    for f in "$dir"/*; do
        one=$(mktemp -d)
        cp "$f" "$one"/
        mkdir "$feat/${f##*/}"
        fuzz_run "$target" "$one" -- -runs=0 "${LIMITS[@]}" -features_dir="$feat/${f##*/}" \
            >/dev/null 2>&1
        rm -rf "$one"
    done
    python3 - "$feat" "$n" <<'EOF'
import array, pathlib, sys
sets = {}
for d in sorted(pathlib.Path(sys.argv[1]).iterdir()):
    fs = set()
    for f in d.iterdir():
        a = array.array("I")
        a.frombytes(f.read_bytes())
        fs |= set(a)
    sets[d.name] = fs
total = set().union(*sets.values())
covered = set()
for _ in range(int(sys.argv[2])):
    name = max(sets, key=lambda k: (len(sets[k] - covered), [-ord(c) for c in k]))
    gain = len(sets[name] - covered)
    if not gain:
        break
    covered |= sets.pop(name)
    print(f"{name}\t+{gain}\t{len(covered)} of {len(total)} features")
EOF
    rm -rf "$feat"
}

case ${1:-} in
    where)
        if (($# > 1)); then
            known "$2"
            echo "$CORPORA/$2"
        else
            echo "$CORPORA"
        fi
        ;;
    inputs)
        (($# == 3)) || die "inputs TARGET DIR"
        known "$2"
        inputs "$2" "$3"
        ;;
    make)
        shift
        make_corpus "$@"
        ;;
    import)
        (($# >= 2)) || die "import REV [TARGET...]"
        shift
        import "$@"
        ;;
    run)
        (($# >= 2)) || die "run TARGET [LIBFUZZER_ARG...]"
        shift
        run "$@"
        ;;
    cov)
        shift
        cov "$@"
        ;;
    pick)
        (($# >= 3)) || die "pick TARGET DIR [N]"
        shift
        pick "$@"
        ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
