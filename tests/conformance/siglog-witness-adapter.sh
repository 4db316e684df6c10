#!/usr/bin/env bash
# Adapts `event-audit witness serve` to the command line the witness conformance suite shipped in
# the siglog crate starts (`--database-url sqlite://PATH --listen ADDR:PORT --private-key KEY
# --log ORIGIN=VKEY`). The suite's generated key is of signature type 0x01, not a cosignature
# key (0x04): the adapter writes its own with `keygen --witness` and ignores it. The state
# directory is PATH.d (a fresh one per test, as the suite's database is).
set -euo pipefail
db="" listen="" log=""
while [ $# -gt 0 ]; do
    case "$1" in
        --database-url) db="$2"; shift 2 ;;
        --listen) listen="$2"; shift 2 ;;
        --private-key) shift 2 ;;
        --log) log="$2"; shift 2 ;;
        *) echo "siglog-witness-adapter: unknown option $1" >&2; exit 2 ;;
    esac
done
bin="${EVENT_AUDIT_BIN:-event-audit}"
path="${db#sqlite:}"; path="${path#//}"
if [ -z "$path" ] || [ "$path" = ":memory:" ]; then path="$(mktemp -d)/witness"; fi
state="$path.d"
rm -rf "$state"; mkdir -p "$state"
printf '%s\n' "${log#*=}" > "$state.log.pub"
"$bin" keygen --witness --name witness-conformance.example/w --out "$state.w" >/dev/null
port="${listen##*:}"
exec "$bin" witness serve --key "$state.w.key" --log-key "$state.log.pub" \
    --state-dir "$state" --listen "127.0.0.1:$port"
