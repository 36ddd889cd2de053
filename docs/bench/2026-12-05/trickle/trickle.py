#!/usr/bin/env python3
"""What a head sent a few bytes at a time costs cowd's worker.

usage: trickle.py PORT WORKER_PID PIECE [CONNS] [LINES] [PACE_MS]

CONNS connections (default 20) each send a head of LINES (default 95)
160-byte header lines, PIECE bytes per send() with TCP_NODELAY, round-robin,
then read the reply; with PACE_MS, a round of sends every PACE_MS ms (an
offered rate the server keeps up with, so its CPU time is the cost of that
rate).  Prints the worker's CPU seconds (utime+stime from
/proc) over the run and per KB of head."""
import os
import socket
import sys
import time

port, pid, piece = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
conns = int(sys.argv[4]) if len(sys.argv) > 4 else 20
lines = int(sys.argv[5]) if len(sys.argv) > 5 else 95
pace = float(sys.argv[6]) / 1000 if len(sys.argv) > 6 else 0


def cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


head = b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n"
for i in range(lines):
    name = b"X-Pad-%03d: " % i
    head += name + b"v" * (158 - len(name)) + b"\r\n"
head += b"\r\n"
socks = []
for _ in range(conns):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    socks.append(s)
c0, t0 = cpu(pid), time.time()
next_round = time.time()
for off in range(0, len(head), piece):
    chunk = head[off:off + piece]
    for s in socks:
        s.send(chunk)
    if pace:
        next_round += pace
        delay = next_round - time.time()
        if delay > 0:
            time.sleep(delay)
ok = 0
for s in socks:
    s.settimeout(30)
    d = s.recv(4096)
    ok += d.startswith(b"HTTP/1.1 200 OK")
    s.close()
used, took = cpu(pid) - c0, time.time() - t0
kb = conns * len(head) / 1024.0
print("piece %d pace %g ms: %d/%d answered 200, head %d bytes, %.2f s, worker CPU %.3f s = %.2f ms per KB"
      % (piece, pace * 1000, ok, conns, len(head), took, used, 1000 * used / kb))
