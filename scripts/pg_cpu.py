"""CPU seconds of a PostgreSQL postmaster (its pid the argument) and every process it forked,
now: utime, stime, cutime and cstime from /proc (other clusters of the postgres user, such as a
test's private one, are left out). Used by scripts/capacity.sh and scripts/bench-encoding.sh."""
import os
import sys

root = sys.argv[1]
ticks = os.sysconf("SC_CLK_TCK")
total = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        stat = open(f"/proc/{pid}/stat").read()
        f = stat[stat.rfind(")") + 2:].split()
        if pid != root and f[1] != root:
            continue
        total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
    except (OSError, ValueError, IndexError):
        pass
print(total / ticks)
