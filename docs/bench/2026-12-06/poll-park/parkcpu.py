#!/usr/bin/env python3
"""CPU an idle worker spends watching N parked keep-alive connections.

Usage: parkcpu.py OLD_COWD NEW_COWD ROOT [N ...]
Each binary is started on 127.0.0.1 (pinned to CPU 0, one worker), N
connections each get one reply and stay idle (parked after 1 s), then the
worker's utime+stime over 8 s is printed as a share of one CPU.  Only the
processes started here are stopped, by PID.
"""
import os
import resource
import signal
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def measure(cowd, root, n):
    port = free_port()
    p = subprocess.Popen(["taskset", "-c", "0", cowd, "--listen", "127.0.0.1:%d" % port, "--root", root,
                          "--keepalive-timeout", "60", "--user", "root"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    socks = []
    try:
        time.sleep(0.5)
        worker = int(open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()[0])
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: a\r\n\r\n")
            socks.append(s)
        for s in socks:
            if not s.recv(65536).startswith(b"HTTP/1.1 200"):
                raise SystemExit("no 200 from %s" % cowd)
        time.sleep(2)                   # every connection parked
        c0, t0 = cpu_seconds(worker), time.time()
        time.sleep(8)
        return 100 * (cpu_seconds(worker) - c0) / (time.time() - t0)
    finally:
        for s in socks:
            s.close()
        p.send_signal(signal.SIGTERM)
        p.wait(15)


def main():
    old, new, root = sys.argv[1:4]
    counts = [int(x) for x in sys.argv[4:]] or [1, 10, 1000, 3000]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8000), hard))
    for n in counts:
        for name, cowd in (("old", old), ("new", new)):
            print("%5d parked  %s  %.1f %% of a CPU" % (n, name, measure(cowd, root, n)), flush=True)


main()
