"""CPU seconds of a PostgreSQL postmaster (its pid the argument) and every process it forked,
now: utime, stime, cutime and cstime from /proc (other clusters of the postgres user, such as a
test's private one, are left out). Used by scripts/capacity.sh and scripts/bench-encoding.sh.

With a command after `--` (`pg_cpu.py PID -- CMD ARGS...`), runs it and prints, on stderr, the
CPU seconds PostgreSQL spent meanwhile by kind of process (client backends, autovacuum,
checkpointer, WAL writer, ...), sampled every 0.1 s (a process that lived less than that may be
missed; the total, from the postmaster's own count of its reaped children, is exact); the
command's exit code is this script's."""
import os
import subprocess
import sys
import time

ticks = os.sysconf("SC_CLK_TCK")


def children(root):
    """{pid: (kind, own CPU ticks)} of the postmaster's direct children, now."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{pid}/stat").read()
            f = stat[stat.rfind(")") + 2:].split()
            if f[1] != root:
                continue
            cmd = open(f"/proc/{pid}/cmdline").read().replace("\0", " ").strip()
            out[pid] = (kind_of(cmd), int(f[11]) + int(f[12]))
        except (OSError, ValueError, IndexError):
            pass
    return out


def kind_of(cmd):
    """The kind of a backend from its title: `postgres: 15/main: checkpointer` and the like;
    a client backend's title names its user and database after the cluster."""
    title = cmd.split(": ", 2)[-1] if cmd.count(": ") >= 2 else cmd
    for k in ("autovacuum launcher", "autovacuum worker", "checkpointer", "background writer",
              "walwriter", "logical replication launcher", "stats collector", "archiver"):
        if title.startswith(k):
            return k
    return "client backends"


def total(root):
    t = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = open(f"/proc/{pid}/stat").read()
            f = stat[stat.rfind(")") + 2:].split()
            if pid != root and f[1] != root:
                continue
            t += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
        except (OSError, ValueError, IndexError):
            pass
    return t


root = sys.argv[1]
if len(sys.argv) > 3 and sys.argv[2] == "--":
    first = children(root)
    t0 = total(root)
    last = dict(first)
    proc = subprocess.Popen(sys.argv[3:])
    while proc.poll() is None:
        time.sleep(0.1)
        last.update(children(root))
    last.update(children(root))
    t1 = total(root)
    by = {}
    for pid, (kind, now) in last.items():
        by[kind] = by.get(kind, 0) + now - first.get(pid, (kind, 0))[1]
    print(f"postgres cpu s: total {(t1 - t0) / ticks:.2f}", file=sys.stderr)
    for kind, t in sorted(by.items(), key=lambda kv: -kv[1]):
        if t:
            print(f"  {kind}: {t / ticks:.2f}", file=sys.stderr)
    sys.exit(proc.returncode)
print(total(root) / ticks)
