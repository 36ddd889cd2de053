#!/usr/bin/env python3
"""idle_conns.py -- hold N idle HTTP/1.1 keep-alive connections (workload e).

Usage: idle_conns.py PORT N PATH MAX_HOLD_S [SETUP_TIMEOUT_S]

Opens N connections to 127.0.0.1:PORT, in batches, sends one complete
"GET PATH" request on each and reads the whole response, so every
connection has been accepted and served and sits in the server's
keep-alive state. Then it sends nothing more and holds them open.

Prints "READY opened=N ok=K failed=F setup_s=T" once set up (flushed), then
waits for SIGTERM/SIGINT/SIGUSR1 or MAX_HOLD_S, checks how many of the K
served connections the server still keeps open (a peek that sees EOF or
an error means the server closed it), prints "ALIVE alive=A of=K", closes
everything and exits. Bounded in time and count; loopback only.

Every connection is closed with a reset (SO_LINGER 0), not a FIN: a FIN
close leaves one TIME_WAIT socket per connection, and 60 s later the kernel
expires those 10,000 sockets in bursts of several milliseconds of timer
work on the server's CPU, in the middle of whichever server's run comes
next (docs/bench/HISTORY.md, "(e)'s stalls"). How idle connections end is
not what (e) measures.
"""
import errno
import os
import selectors
import signal
import socket
import struct
import sys
import time

BATCH = 256
ABORT = struct.pack("ii", 1, 0)     # struct linger {l_onoff 1, l_linger 0}


def abort(s):
    """Closes s with a reset, so that it leaves no TIME_WAIT socket."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, ABORT)
    except OSError:
        pass
    s.close()


def main():
    port, n, path, max_hold = (int(sys.argv[1]), int(sys.argv[2]),
                               sys.argv[3], float(sys.argv[4]))
    setup_timeout = float(sys.argv[5]) if len(sys.argv) > 5 else 60.0
    req = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "User-Agent: cowd-bench-idle\r\n\r\n").encode()
    # before READY: a signal sent as soon as READY is read must not kill us
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, lambda *_: stop.append(1))
    t0 = time.monotonic()
    deadline = t0 + setup_timeout
    sel = selectors.DefaultSelector()
    served, failed = [], 0
    started = 0

    def start_one():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        except OSError:
            abort(s)
            return False
        # state: [phase, buffer, expected total length]
        sel.register(s, selectors.EVENT_WRITE, ["connect", b"", None])
        return True

    inflight = 0
    while (started < n or inflight) and time.monotonic() < deadline and not stop:
        while started < n and inflight < BATCH:
            started += 1
            if start_one():
                inflight += 1
            else:
                failed += 1
        for key, _ in sel.select(timeout=0.5):
            s, st = key.fileobj, key.data
            done = err = False
            try:
                if st[0] == "connect":
                    e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if e:
                        raise OSError(e, os.strerror(e))
                    s.sendall(req)  # tiny: fits the socket buffer
                    st[0] = "read"
                    sel.modify(s, selectors.EVENT_READ, st)
                    continue
                chunk = s.recv(65536)
                if not chunk:
                    raise OSError(errno.ECONNRESET, "closed by server")
                st[1] += chunk
                if st[2] is None and b"\r\n\r\n" in st[1]:
                    head, _, _ = st[1].partition(b"\r\n\r\n")
                    clen = 0
                    for line in head.split(b"\r\n")[1:]:
                        k, _, v = line.partition(b":")
                        if k.strip().lower() == b"content-length":
                            clen = int(v.strip())
                    st[2] = len(head) + 4 + clen
                    if not head.startswith(b"HTTP/1.1 200"):
                        err = True
                if st[2] is not None and len(st[1]) >= st[2]:
                    done = True
            except OSError:
                err = True
            if done or err:
                sel.unregister(s)
                inflight -= 1
                if err:
                    failed += 1
                    abort(s)
                else:
                    served.append(s)
    # anything still in flight at the deadline counts as failed
    for key in list(sel.get_map().values()):
        sel.unregister(key.fileobj)
        abort(key.fileobj)
        failed += 1
    failed += n - started
    print(f"READY opened={n} ok={len(served)} failed={failed} "
          f"setup_s={time.monotonic() - t0:.2f}", flush=True)

    end = time.monotonic() + max_hold
    while not stop and time.monotonic() < end:
        time.sleep(0.2)

    alive = 0
    for s in served:
        try:
            data = s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
            if data:  # unexpected bytes: still open
                alive += 1
        except BlockingIOError:
            alive += 1  # nothing to read and no EOF: still open
        except OSError:
            pass
    print(f"ALIVE alive={alive} of={len(served)}", flush=True)
    for s in served:
        abort(s)


if __name__ == "__main__":
    main()
