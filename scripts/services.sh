#!/usr/bin/env bash
# Starts PostgreSQL and NATS (JetStream) on this machine if they are not running, and the S3-compatible
# servers of tests/it/blobs.rs: s3s-fs on 127.0.0.1:9000 (data in /var/lib/event-audit-s3s, the
# fixed test credentials below, SigV4 checked) and moto on 127.0.0.1:9001 (in memory, Object Lock
# emulated), when scripts/test-deps.sh installed them; waits for each. `--no-s3` starts
# PostgreSQL and NATS alone (scripts/demo.sh: the demo needs no object store, and leaves no
# server of its own running after Ctrl-C).
set -euo pipefail
no_s3=0
if [ "${1:-}" = "--no-s3" ]; then no_s3=1; fi
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
        -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
fi
up() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The test credentials of the S3 servers (tests/it/support/s3.rs holds the same): they guard
# nothing but test buckets on the loopback interface.
S3_TEST_ACCESS_KEY=event-audit-test
S3_TEST_SECRET_KEY=event-audit-test-secret
# The S3 servers only where scripts/test-deps.sh installed them (the demo needs neither).
s3s=$(command -v s3s-fs || echo "$HOME/.cargo/bin/s3s-fs")
moto="$HOME/.local/share/event-audit/moto/bin/moto_server"
wait_for=(4222)
if [ "$no_s3" = 1 ]; then s3s=/nonexistent moto=/nonexistent; fi
if [ -x "$s3s" ]; then
    wait_for+=(9000)
    # A server that is running but slow to accept is left alone: its directory is never
    # removed under it.
    if ! up 9000 && ! pgrep -f "s3s-fs --host 127.0.0.1 --port 9000" >/dev/null; then
        # Test data only: a fresh start leaves nothing of earlier runs (s3s-fs keeps a deleted
        # object's metadata files).
        rm -rf /var/lib/event-audit-s3s && mkdir -p /var/lib/event-audit-s3s
        nohup setsid "$s3s" --host 127.0.0.1 --port 9000 --access-key "$S3_TEST_ACCESS_KEY" \
            --secret-key "$S3_TEST_SECRET_KEY" /var/lib/event-audit-s3s \
            >>/var/log/event-audit-s3s-fs.log 2>&1 </dev/null &
    fi
fi
if [ -x "$moto" ]; then
    wait_for+=(9001)
    if ! up 9001 && ! pgrep -f "moto_server -H 127.0.0.1 -p 9001" >/dev/null; then
        nohup setsid "$moto" -H 127.0.0.1 -p 9001 >>/var/log/event-audit-moto.log 2>&1 </dev/null &
    fi
fi
for _ in $(seq 1 60); do
    all=1
    for port in "${wait_for[@]}"; do up "$port" || all=0; done
    if [ "$all" = 1 ] && pg_isready -q -h 127.0.0.1 -p 5432; then
        exit 0
    fi
    sleep 0.5
done
echo "PostgreSQL, NATS or an S3 server (s3s-fs on 9000, moto on 9001) did not come up; see /var/log/event-audit-*.log" >&2
exit 1
