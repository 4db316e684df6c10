#!/usr/bin/env bash
# Runs aics-witness (PyPI, 0.1.0: a C2SP tlog-witness by another author) as its `aics-witness`
# command, e.g. `scripts/aics-witness.sh serve --config witness.json`. Installs it when missing
# (idempotent) in a virtual environment under ~/.local/share/event-audit/aics-witness. It
# declares Python 3.12 or newer: the first of python3.13, python3.12, python3 that runs and is
# new enough, else the newest one pyenv built ($(pyenv root)/versions/3.1[2-9]*). Without one, a
# python3 3.11 installs it with pip's --ignore-requires-python (its code uses nothing newer than
# 3.11; tests/it/witness_aics.rs passes that way too), and this says so on stderr. With an older
# python3 still, this says so on stderr and exits 3. `--install` only installs.
set -euo pipefail
venv="$HOME/.local/share/event-audit/aics-witness/venv"
at_least() { "$1" -c "import sys; sys.exit(sys.version_info < (3, $2))" 2>/dev/null; }
if [ ! -x "$venv/bin/aics-witness" ]; then
    python=""
    for c in python3.13 python3.12 python3; do
        if command -v "$c" >/dev/null && at_least "$c" 12; then python="$(command -v "$c")"; break; fi
    done
    if [ -z "$python" ] && command -v pyenv >/dev/null; then
        for c in "$(pyenv root)"/versions/3.1[2-9]*/bin/python3; do
            if [ -x "$c" ] && at_least "$c" 12; then python="$c"; fi
        done
    fi
    pip_flags=()
    if [ -z "$python" ] && at_least python3 11; then
        python="$(command -v python3)"
        pip_flags=(--ignore-requires-python)
        echo "no Python 3.12 or newer here: installing aics-witness 0.1.0 on $(python3 -V 2>&1)" \
            "with --ignore-requires-python" >&2
    fi
    if [ -z "$python" ]; then
        echo "aics-witness 0.1.0 needs Python 3.12 (or 3.11 ignoring its Requires-Python);" \
            "this machine has none: python3 is $(python3 -V 2>&1)" >&2
        exit 3
    fi
    echo "installing aics-witness 0.1.0 in $venv (with $("$python" -V 2>&1))" >&2
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${pip_flags[@]}" 'aics-witness==0.1.0'
fi
if [ "${1:-}" = "--install" ]; then exit 0; fi
exec "$venv/bin/aics-witness" "$@"
