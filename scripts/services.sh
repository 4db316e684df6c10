#!/usr/bin/env bash
# Starts PostgreSQL and NATS (JetStream) on this machine if they are not running, and waits for them.
set -euo pipefail
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
        -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
fi
for _ in $(seq 1 60); do
    if pg_isready -q -h 127.0.0.1 -p 5432 && (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
        exit 0
    fi
    sleep 0.5
done
echo "PostgreSQL or NATS did not come up" >&2
exit 1
