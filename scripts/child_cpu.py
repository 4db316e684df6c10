"""Runs a command and writes the CPU seconds (user and system) it and the processes it waited
for used to a file: `child_cpu.py OUT_FILE CMD ARGS...`; exits non-zero when the command does.
Used by scripts/capacity.sh, scripts/bench-encoding.sh and scripts/bench-builds.sh."""
import resource
import subprocess
import sys

subprocess.run(sys.argv[2:], check=True)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    f.write(str(r.ru_utime + r.ru_stime))
