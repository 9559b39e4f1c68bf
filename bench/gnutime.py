#!/usr/bin/env python3
"""A stand-in for GNU time's `-v -o FILE CMD...` (and `-f "%U %S %M"`) where /usr/bin/time is absent
(bench/ledger.sh's TIME=): runs CMD, writes the lines ledger.sh reads
(user, system time and peak RSS of the children, from getrusage)."""
import resource
import subprocess
import sys

args = sys.argv[1:]
out = None
fmt = None
while args and args[0] in ("-v", "-o", "-f"):
    if args[0] == "-v":
        args = args[1:]
    elif args[0] == "-o" and len(args) >= 2:
        out, args = args[1], args[2:]
    elif args[0] == "-f" and len(args) >= 2:
        fmt, args = args[1], args[2:]
    else:
        break
rc = subprocess.call(args)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
if fmt is not None:  # GNU time's -f: %U user s, %S system s, %M peak RSS KB
    text = (fmt.replace("%U", f"{r.ru_utime:.2f}").replace("%S", f"{r.ru_stime:.2f}")
            .replace("%M", str(r.ru_maxrss))) + "\n"
else:
    text = (f"User time (seconds): {r.ru_utime:.2f}\nSystem time (seconds): {r.ru_stime:.2f}\n"
            f"Maximum resident set size (kbytes): {r.ru_maxrss}\n")
if out:
    with open(out, "w") as f:
        f.write(text)
else:
    sys.stderr.write(text)
sys.exit(rc)
