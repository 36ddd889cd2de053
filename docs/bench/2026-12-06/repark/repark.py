#!/usr/bin/env python3
"""What a parked connection woken by empty lines costs the worker, with
many connections parked after it.

Usage: repark.py OLD_COWD NEW_COWD ROOT [N ...]
Each binary is started on 127.0.0.1 (pinned to CPU 0, one worker,
--keepalive-timeout 60); this script runs on CPU 1.  K = 100 connections
each get one reply and are parked; 2.2 s later N more do the same.  Then
each of the K sends 30 empty lines, one at a time (every one wakes it from
the park, and its handler parks it again with its old idle time: 3,000
re-parks), and the worker's utime+stime over that stretch is printed, in
all and per re-park.  Each of the K then asks for ROOT/hello.txt and must
get it.  Only the processes started here are stopped, by PID.
"""
import os
import resource
import signal
import socket
import subprocess
import sys
import time

K, ROUNDS = 100, 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def served(port, n):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: a\r\n\r\n")
        socks.append(s)
    for s in socks:
        if not s.recv(65536).startswith(b"HTTP/1.1 200"):
            raise SystemExit("no 200")
    return socks


def measure(cowd, root, n):
    port = free_port()
    p = subprocess.Popen(["taskset", "-c", "0", cowd, "--listen", "127.0.0.1:%d" % port, "--root", root,
                          "--keepalive-timeout", "60", "--user", "root"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    old, later = [], []
    try:
        time.sleep(0.5)
        worker = int(open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()[0])
        old = served(port, K)
        time.sleep(2.2)                 # parked, and idle since an earlier second
        later = served(port, n)
        time.sleep(2)                   # every connection parked
        c0 = cpu_seconds(worker)
        for _ in range(ROUNDS):
            for s in old:
                s.sendall(b"\r\n")
            time.sleep(0.02)
        time.sleep(1)
        used = cpu_seconds(worker) - c0
        for s in old:
            s.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: a\r\n\r\n")
            if not s.recv(65536).startswith(b"HTTP/1.1 200"):
                raise SystemExit("no 200 after the empty lines")
        return used
    finally:
        for s in old + later:
            s.close()
        p.send_signal(signal.SIGTERM)
        p.wait(15)


def main():
    old, new, root = sys.argv[1:4]
    counts = [int(x) for x in sys.argv[4:]] or [0, 2000, 8000]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    os.sched_setaffinity(0, {1})
    for n in counts:
        for name, cowd in (("old", old), ("new", new)):
            used = measure(cowd, root, n)
            print("%5d parked after  %s  %6.0f ms of the worker's CPU, %5.1f us a re-park"
                  % (n, name, 1000 * used, 1e6 * used / (K * ROUNDS)), flush=True)


main()
