#!/usr/bin/env python3
"""proctree.py PID -- CPU seconds, RSS and process count of PID's process tree.

Prints "CPU_SECONDS RSS_KB NPROCS". CPU is the sum over PID and every live
descendant of utime+stime+cutime+cstime from /proc/*/stat: cutime/cstime
cover children that already exited and were reaped, so nothing is lost
when a worker process dies between two samples. Prints "0 0 0" if PID is gone.
"""
import os
import sys

TICK = os.sysconf("SC_CLK_TCK")


def read_stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    rest = data[data.rindex(")") + 2:].split()
    # rest[0] is field 3 (state); field n is rest[n - 3].
    ppid = int(rest[1])
    cpu = sum(int(rest[i]) for i in (11, 12, 13, 14))  # fields 14..17
    return ppid, cpu


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main():
    root = int(sys.argv[1])
    stats = {}
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = read_stat(name)
        if st is None:
            continue
        pid = int(name)
        stats[pid] = st
        children.setdefault(st[0], []).append(pid)
    if root not in stats:
        print("0 0 0")
        return
    todo, seen = [root], []
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo.extend(children.get(pid, []))
    ticks = sum(stats[p][1] for p in seen)
    rss = sum(rss_kb(p) for p in seen)
    print(f"{ticks / TICK:.2f} {rss} {len(seen)}")


if __name__ == "__main__":
    main()
