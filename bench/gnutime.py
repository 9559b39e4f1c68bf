#!/usr/bin/env python3
"""A stand-in for GNU time's `-v -o FILE CMD...` where /usr/bin/time is absent
(bench/ledger.sh's TIME=): runs CMD, writes the lines ledger.sh reads
(user, system time and peak RSS of the children, from getrusage)."""
import resource
import subprocess
import sys

args = sys.argv[1:]
out = None
if args and args[0] == "-v":
    args = args[1:]
if len(args) >= 2 and args[0] == "-o":
    out, args = args[1], args[2:]
rc = subprocess.call(args)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
text = (f"User time (seconds): {r.ru_utime:.2f}\nSystem time (seconds): {r.ru_stime:.2f}\n"
        f"Maximum resident set size (kbytes): {r.ru_maxrss}\n")
if out:
    with open(out, "w") as f:
        f.write(text)
else:
    sys.stderr.write(text)
sys.exit(rc)
