#!/usr/bin/env bash
# What each index of audit.events, and the envelope-id claims, cost an insert of the log's own
# rows. Against a database holding an audit log (e.g. `event-audit bench copy --through-sink`),
# copies its rows (bus times spread a millisecond apart when they are all equal, as the bench's
# are) into a plain table of the log's columns with its primary key, then for each variant —
# the primary key alone, and the primary key with one more index — times `INSERT … SELECT` of
# every row into a fresh table, after a CHECKPOINT, ROUNDS times in turn (default 3); prints the
# median seconds of each and its cost beyond the primary key alone, and each index's size.
# Usage: scripts/profile-indexes.sh DATABASE_URL [ROUNDS]
set -euo pipefail
DB=$1
ROUNDS=${2:-3}
q() { psql -X -q -v ON_ERROR_STOP=1 "$DB" "$@"; }
q -c "DROP TABLE IF EXISTS public.q_src" -c "CREATE TABLE public.q_src AS SELECT * FROM audit.events WHERE stream <> 'event-audit.erasures'" \
  -c "UPDATE public.q_src SET published_at = published_at + stream_seq * interval '1 millisecond' WHERE (SELECT count(DISTINCT published_at) FROM public.q_src) = 1" \
  -c "VACUUM ANALYZE public.q_src"
declare -A IDX=(
  [pk]=""
  [account]="CREATE INDEX ON q_t (account_number, occurred_at) WHERE account_number IS NOT NULL"
  [account_only]="CREATE INDEX ON q_t (account_number) WHERE account_number IS NOT NULL"
  [type_time]="CREATE INDEX ON q_t (event_type, published_at)"
  [batch]="CREATE INDEX ON q_t (batch_id)"
  [data_import_ext]="CREATE INDEX ON q_t ((payload ->> 'external_identifier'), occurred_at) WHERE event_type LIKE 'data_import.%'"
  [published_brin]="CREATE INDEX ON q_t USING brin (published_at)"
  [all_before]="CREATE INDEX ON q_t (account_number, occurred_at) WHERE account_number IS NOT NULL; CREATE INDEX ON q_t (event_type, published_at); CREATE INDEX ON q_t (batch_id); CREATE INDEX ON q_t ((payload ->> 'external_identifier'), occurred_at) WHERE event_type LIKE 'data_import.%'"
  [all_after]="CREATE INDEX ON q_t (account_number) WHERE account_number IS NOT NULL; CREATE INDEX ON q_t USING brin (published_at); CREATE INDEX ON q_t (batch_id); CREATE INDEX ON q_t ((payload ->> 'external_identifier'), occurred_at) WHERE event_type LIKE 'data_import.%'"
)
ORDER="pk account account_only type_time batch data_import_ext published_brin all_before all_after"
OUT=$(mktemp)
trap 'rm -f "$OUT"; q -c "DROP TABLE IF EXISTS public.q_t, public.q_src" >/dev/null 2>&1 || true' EXIT
for r in $(seq "$ROUNDS"); do
  for v in $ORDER; do
    q -c "DROP TABLE IF EXISTS public.q_t" \
      -c "CREATE TABLE public.q_t (LIKE audit.events INCLUDING DEFAULTS)" \
      -c "ALTER TABLE public.q_t ADD PRIMARY KEY (stream, stream_seq, published_at)" \
      -c "SET search_path = public; ${IDX[$v]:-SELECT 1}" -c "CHECKPOINT" >/dev/null
    ms=$(q -c '\timing on' -c "INSERT INTO public.q_t SELECT * FROM public.q_src" | awk '/^Time:/ {print $2}')
    size=$(q -tA -c "SELECT coalesce(sum(pg_relation_size(indexrelid)), 0) FROM pg_index WHERE indrelid = 'public.q_t'::regclass AND NOT indisprimary")
    echo "$v $ms $size" >> "$OUT"
  done
done
rows=$(q -tA -c "SELECT count(*) FROM public.q_src")
python3 - "$OUT" "$rows" "$ORDER" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    v, ms, size = line.split()
    runs.setdefault(v, []).append((float(ms), int(size)))
rows = int(sys.argv[2])
base = statistics.median(ms for ms, _ in runs["pk"])
print(f"{rows} rows, median of {len(runs['pk'])} rounds")
print(f"{'variant':16} {'insert s':>9} {'beyond pk s':>11} {'us/row':>7} {'index MB':>9}")
for v in sys.argv[3].split():
    m = statistics.median(ms for ms, _ in runs[v])
    print(f"{v:16} {m/1000:9.3f} {(m-base)/1000:11.3f} {(m-base)*1000/rows:7.2f} {runs[v][-1][1]/2**20:9.1f}")
PY
