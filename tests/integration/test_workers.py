"""Pre-forked workers, the master's supervision and signals, the access log,
privilege dropping, --daemon and --pid-file (issue 6).

Every test here starts its own server(s) (the master exits or is signalled),
so the shared server the runner passes in is used only for its document root.
Run alone: COWD=build/src/cowd COWD_SRCDIR=. tests/integration/run workers:
"""

import ctypes
import errno
import grp
import os
import re
import resource
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import threading
import time

import cowdtest
from cowdtest import (BIG_SIZE, HELLO, Closed, Server, TestFailure, TestSkip, check, eq, read_to_eof, request,
                      test)


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

children = cowdtest.children_of


def wait_for(cond, timeout, what, step=0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise TestFailure("timed out after %.1fs waiting for %s" % (timeout, what))


def workers_of(srv, n, timeout=5):
    return wait_for(lambda: (lambda c: c if len(c) == n else None)(children(srv.proc.pid)),
                    timeout, "%d workers" % n)


def uid_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Uid:"):
                return [int(x) for x in line.split()[1:]]
    raise TestFailure("no Uid line for %d" % pid)


def settled_uid(pid, want, timeout=5):
    """The worker's uids once it has finished starting (it drops privileges
    right after the fork; under valgrind that takes a while)."""
    deadline = time.time() + timeout * cowdtest.SLOW
    while True:
        u = uid_of(pid)
        if u == want or time.time() > deadline:
            return u
        time.sleep(0.05)


def start(root, args, preexec=None, **kw):
    srv = Server(root, ["--error-log", tempfile.mktemp(prefix="cowd-err-", dir=root.tmp)] + args, **kw)
    srv.err_log = srv.args[1]
    srv.preexec = preexec
    srv.start()
    return srv


def error_log(srv):
    try:
        with open(srv.err_log, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def stop(srv, timeout=15):
    """SIGTERM to the master; returns its exit status."""
    if srv.proc is None:
        return None
    srv.proc.send_signal(signal.SIGTERM)
    return stop_wait(srv, timeout)


def stop_wait(srv, timeout=15):
    """The master's exit status, once it has exited."""
    try:
        return srv.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise TestFailure("master did not exit within %ss of its stop signal; log: %s"
                          % (timeout, error_log(srv)[-1500:]))


def finish(srv):
    """Kill everything that is left (master and workers) after a test, then
    fail it if a sanitizer reported anything, in stderr or the error log
    (these servers are the test's own: the runner never looks at them)."""
    if srv.proc is not None:
        pids = children(srv.proc.pid)
        srv.kill()
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    logs = [("stderr", srv.stderr())]
    if hasattr(srv, "err_log"):
        logs.append(("error log", error_log(srv)))
    for where, log in logs:
        for mark in cowdtest.SANITIZER_MARKS:
            if mark in log:
                i = log.index(mark)
                raise TestFailure("sanitizer report in the server's %s: %s" % (where, log[max(0, i - 200):i + 1500]))


def first_get(p, port):
    """GET /hello.txt from the server process p once it listens on port."""
    def serving():
        if p.poll() is not None:
            err = p.stderr.read()[-300:] if p.stderr is not None else b""
            raise TestFailure("exited %d: %r" % (p.returncode, err))
        try:
            return get_one(port, "/hello.txt", timeout=1)
        except OSError:
            return None
    return wait_for(serving, 10 * cowdtest.SLOW, "serving")


def kill_all(p):
    """After a test that started cowd itself: kill what is left, workers first."""
    if p.poll() is None:
        for k in children(p.pid):
            os.kill(k, signal.SIGKILL)
        p.kill()
        p.wait()


def get_one(port, target, headers=None, timeout=5):
    with cowdtest.Conn(port, timeout) as c:
        c.send(request("GET", target, headers))
        return c.response()


class BadReply(Exception):
    """A whole reply with the wrong status or body: a failure, never retried."""


class CutShort(Exception):
    """A reply that began and then stopped (a worker killed mid-reply)."""


class Load:
    """`n` client threads, each a keep-alive connection sending GETs in a loop.
    A request that gets nothing (reset, close, timeout) or a reply cut short
    is retried on a new connection (twice at most; cut_short counts the cut
    replies); failed retries, and any wrong reply, count as a failure."""

    def __init__(self, port, n=6, target="/hello.txt", body=HELLO):
        self.port, self.target, self.body = port, target, body
        self.ok = self.retried = self.cut_short = 0
        self.failures = []
        self.lock = threading.Lock()
        self.running = True
        self.threads = [threading.Thread(target=self.loop, daemon=True) for _ in range(n)]
        for t in self.threads:
            t.start()

    def one(self, c):
        before = c.received
        c.send(request("GET", self.target))
        try:
            r = c.response()
        except (OSError, Closed, TestFailure) as e:
            if c.received > before:
                raise CutShort("reply cut short: %s" % e)
            raise
        if r.status != 200 or r.body != self.body:
            raise BadReply("bad response %r" % r)

    def loop(self):
        c = None
        while self.running:
            # the request, then twice on a new connection: under valgrind
            # or the select backend a retry can still race the dying worker
            errors = []
            for attempt in range(3):
                try:
                    if c is None:
                        c = cowdtest.Conn(self.port, 3)
                    self.one(c)
                    with self.lock:
                        self.ok += 1
                        self.retried += attempt > 0
                    errors = []
                    break
                except BadReply as e:
                    errors = [e]
                    break
                except (OSError, Closed, TestFailure, CutShort) as e:
                    errors.append(e)
                    if isinstance(e, CutShort):
                        with self.lock:
                            self.cut_short += 1
                if c is not None:
                    c.close()
                    c = None
            if errors:
                if c is not None:
                    c.close()
                    c = None
                with self.lock:
                    self.failures.append(" / ".join(str(e) for e in errors))
        if c is not None:
            c.close()

    def stop(self):
        self.running = False
        for t in self.threads:
            t.join(10)


# ---------------------------------------------------------------------------
# supervision
# ---------------------------------------------------------------------------

@test("workers: --workers 4 forks 4 workers that all serve")
def _(shared):
    srv = start(shared.root, ["--workers", "4"])
    try:
        pids = workers_of(srv, 4)
        check(srv.proc.pid not in pids, "master among its workers")
        for _ in range(20):
            eq(get_one(srv.port, "/hello.txt").body, HELLO, "body")
        eq(stop(srv), 0, "master exit status")
        for p in pids:
            # reparented to init once the master is gone, not its child
            wait_for(lambda: not alive(p), 5 * cowdtest.SLOW, "worker %d to exit with the master" % p)
    finally:
        finish(srv)


@test("workers: kill -9 of one of 4 workers under load: no failed request, worker replaced")
def _(shared):
    srv = start(shared.root, ["--workers", "4", "--threads", "64"])
    load = None
    try:
        pids = workers_of(srv, 4)
        load = Load(srv.port, n=8)
        time.sleep(0.7)
        victim = pids[1]
        os.kill(victim, signal.SIGKILL)
        new = wait_for(lambda: (lambda c: c if len(c) == 4 and victim not in c else None)(
            children(srv.proc.pid)), 5, "a replacement worker")
        time.sleep(1.0)
        load.stop()
        eq(load.failures[:3], [], "failed requests (after retries)")
        check(load.ok > 100, "too few requests served under load: %d" % load.ok)
        check(len(set(new) - set(pids)) == 1, "one new worker pid: old %r new %r" % (pids, new))
        log = error_log(srv)
        check(re.search(r"worker %d \(slot 1\) killed by signal 9" % victim, log) is not None,
              "the master did not log the death of worker %d: %s" % (victim, log[-800:]))
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "after the restart")
        eq(stop(srv), 0, "master exit status")
    finally:
        if load is not None:
            load.stop()
        finish(srv)


@test("workers: a worker that keeps dying is restarted with growing back-off")
def _(shared):
    srv = start(shared.root, ["--workers", "1"])
    try:
        # served first: a worker killed while the server is still starting is
        # start-up news, echoed to standard error, which health() reads
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "served before the kills")
        for _ in range(4):
            w = workers_of(srv, 1)
            os.kill(w[0], signal.SIGKILL)
            wait_for(lambda: w[0] not in children(srv.proc.pid), 5, "the worker to die")
        log = error_log(srv)
        delays = [float(x) for x in re.findall(r"restarting it in ([0-9.]+) s", log)]
        check(len(delays) >= 3, "back-off not logged: %s" % log[-1000:])
        check(delays == sorted(delays) and delays[-1] > delays[0],
              "back-off does not grow: %r" % delays)
        workers_of(srv, 1, timeout=5)
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "served after restarts")
        check(srv.health() is None, "master unhealthy: %s" % srv.health())
    finally:
        finish(srv)


@test("workers: SIGHUP replaces every worker; requests keep succeeding")
def _(shared):
    srv = start(shared.root, ["--workers", "2"])
    load = None
    try:
        old = workers_of(srv, 2)
        load = Load(srv.port, n=4)
        time.sleep(0.3)
        srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: (lambda c: c if len(c) == 2 and not set(c) & set(old) else None)(
            children(srv.proc.pid)), 8, "the old workers to be replaced")
        time.sleep(0.3)
        load.stop()
        eq(load.failures[:3], [], "failed requests during SIGHUP")
        # a graceful restart lets replies in progress finish: only a request
        # racing the close of an idle kept-alive connection may be retried
        eq(load.cut_short, 0, "replies cut short during SIGHUP (retried)")
        eq(stop(srv), 0, "master exit status")
    finally:
        if load is not None:
            load.stop()
        finish(srv)


@test("workers: the workers stop when the master is killed")
def _(shared):
    srv = start(shared.root, ["--workers", "2"])
    try:
        pids = workers_of(srv, 2)
        srv.proc.kill()
        srv.proc.wait()
        for p in pids:
            wait_for(lambda: not os.path.exists("/proc/%d" % p) or
                     open("/proc/%d/stat" % p).read().split(") ")[1][0] == "Z",
                     5, "orphaned worker %d to exit" % p)
    finally:
        finish(srv)


@test("workers: --reuseport gives every worker connections")
def _(shared):
    srv = start(shared.root, ["--workers", "2", "--reuseport"])
    try:
        workers_of(srv, 2)
        for i in range(40):
            eq(get_one(srv.port, "/hello.txt").body, HELLO, "body %d" % i)
        eq(stop(srv), 0, "master exit status")
        counts = [int(x) for x in re.findall(r"worker exiting: ([0-9]+) connections accepted",
                                             error_log(srv))]
        eq(len(counts), 2, "exit lines of the 2 workers")
        check(min(counts) > 0 and sum(counts) >= 40,     # + the harness's start-up probes
              "connections per worker with SO_REUSEPORT: %r" % counts)
    finally:
        finish(srv)


@test("workers: --reuseport refuses an address another server listens on")
def _(shared):
    # Before: SO_REUSEPORT let the second instance bind too, and the two
    # silently split the traffic.
    srv = start(shared.root, ["--workers", "1", "--reuseport"])
    try:
        p = subprocess.run([cowdtest.COWD, "--listen", "127.0.0.1:%d" % srv.port, "--root",
                            shared.root.path, "--reuseport", "--workers", "2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
        eq(p.returncode, 1, "exit status of the second instance")
        check(b"in use" in p.stderr, "message: %r" % p.stderr[-300:])
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


@test("workers: --reuseport with one address given twice still starts")
def _(shared):
    # The in-use check must see other processes' listeners only: run before
    # any of our sockets is open, not between them (a review found the
    # second --listen refused as "in use" by the first).
    port = cowdtest.free_port()
    p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:%d" % port, "--listen",
                          "127.0.0.1:%d" % port, "--root", shared.root.path, "--reuseport",
                          "--workers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        eq(first_get(p, port).body, HELLO, "served")
        p.send_signal(signal.SIGTERM)
        eq(p.wait(15), 0, "master exit status")
    finally:
        kill_all(p)


@test("workers: --reuseport with port 0: every worker on the one port the log names")
def _(shared):
    # Before: each worker's socket got a port of its own, and the log said ":0".
    err = tempfile.mktemp(prefix="cowd-err-", dir=shared.root.tmp)
    p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:0", "--root", shared.root.path,
                          "--reuseport", "--workers", "2", "--error-log", err],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def port():
            try:
                m = re.search(r"on http://127\.0\.0\.1:([0-9]+)/", open(err).read())
            except OSError:
                return None
            return int(m.group(1)) if m else None
        port = wait_for(port, 10, "the serving line")
        check(port != 0, "the log names port 0")
        wait_for(lambda: len(children(p.pid)) == 2, 5, "2 workers")
        for i in range(30):
            eq(get_one(port, "/hello.txt").body, HELLO, "body %d" % i)
        p.send_signal(signal.SIGTERM)
        eq(p.wait(15), 0, "master exit status")
        counts = [int(x) for x in re.findall(r"worker exiting: ([0-9]+) connections accepted", open(err).read())]
        eq(len(counts), 2, "exit lines of the 2 workers")
        check(min(counts) > 0, "connections per worker: %r" % counts)
    finally:
        kill_all(p)


# ---------------------------------------------------------------------------
# graceful stop
# ---------------------------------------------------------------------------

BIG50 = 50 * 1024 * 1024


def big50(root):
    path = os.path.join(root.path, "big50.bin")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            for _ in range(BIG50 // len(root.big_block)):
                f.write(root.big_block)
    return path


@test("workers: SIGTERM during a 50 MB transfer to a slow reader: it completes, master exits 0")
def _(shared):
    big50(shared.root)
    srv = start(shared.root, ["--workers", "2", "--shutdown-timeout", "30"])
    try:
        workers_of(srv, 2)
        # an idle kept-alive connection: must be closed promptly by the stop
        idle = srv.conn()
        idle.send(request("GET", "/hello.txt"))
        eq(idle.response().body, HELLO, "idle connection's first response")
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        s.sendall(request("GET", "/big50.bin"))
        got = bytearray()
        while len(got) < 2 * 1024 * 1024:
            d = s.recv(65536)
            check(d, "server closed early")
            got += d
        srv.proc.send_signal(signal.SIGTERM)
        idle.expect_closed(3.0)
        t0 = time.time()
        while True:                         # slow reader: about 40 MB/s at most
            d = s.recv(65536)
            if not d:
                break
            got += d
            time.sleep(0.001)
        s.close()
        head, _, body = bytes(got).partition(b"\r\n\r\n")
        check(head.startswith(b"HTTP/1.1 200 "), "status: %r" % head[:40])
        eq(len(body), BIG50, "body length")
        block = shared.root.big_block
        for i in range(0, BIG50, len(block)):
            if body[i:i + len(block)] != block:
                raise TestFailure("body differs in the MiB at %d" % i)
        check(time.time() - t0 > 0.3, "transfer too fast to have overlapped the stop")
        eq(srv.proc.wait(10), 0, "master exit status")
        try:
            socket.create_connection(("127.0.0.1", srv.port), timeout=1).close()
            raise TestFailure("still accepting connections after the master exited")
        except OSError:
            pass
    finally:
        finish(srv)


# A connection the park refused (its epoll_ctl failing, as at the kernel's
# watch limit) waited in its handler thread without being marked idle, so
# a graceful stop did not end its wait: the worker stayed for
# --shutdown-timeout and then cut every connection it still had.  Both
# kinds: kept alive after a reply, and new and silent.
def park_mark(shared):
    """A file for FAULT_EPOLL_ONESHOT_MARK."""
    return cowdtest.fault_mark(shared.root.tmp, "park-refused")


def park_refusals(mark):
    try:
        return os.path.getsize(mark)
    except OSError:
        return 0


def wait_park_refusals(srv, mark, n):
    """Waits for n parks refused by the fault shim (FAULT_EPOLL_ONESHOT_MARK
    = mark); skips where the park does not use epoll_ctl."""
    try:
        wait_for(lambda: park_refusals(mark) >= n, 5 * cowdtest.SLOW, "%d refused parks" % n)
    except TestFailure:
        version = subprocess.run([cowdtest.COWD, "--version"], capture_output=True,
                                 text=True, timeout=10).stdout
        if " epoll park" in version:
            raise                       # it must have tried
        raise TestSkip("the park of this build does not use epoll_ctl: nothing was refused")


@test("workers: connections the park refused are closed at once by a graceful stop")
def _(shared):
    mark = park_mark(shared)
    with cowdtest.preloaded_faults(shared.root.tmp, FAULT_EPOLL_ONESHOT_ERRNO=str(errno.ENOSPC),
                                   FAULT_EPOLL_ONESHOT_MARK=mark):
        srv = start(shared.root, ["--workers", "1", "--shutdown-timeout", "30", "--defer-accept", "0",
                                  "--keepalive-timeout", "60", "--header-timeout", "60"])
    try:
        workers_of(srv, 1)
        idle = srv.conn()
        idle.send(request("GET", "/hello.txt"))
        eq(idle.response().body, HELLO, "first response")
        silent = srv.conn()
        # each handler tries to park a second after its wait began
        wait_park_refusals(srv, mark, 2)
        srv.proc.send_signal(signal.SIGTERM)
        t0 = time.time()
        idle.expect_closed(3.0 * cowdtest.SLOW)
        silent.expect_closed(3.0 * cowdtest.SLOW)
        eq(stop_wait(srv, 10 * cowdtest.SLOW), 0, "master exit status")
        check(time.time() - t0 < 5 * cowdtest.SLOW, "exited %.1f s after SIGTERM" % (time.time() - t0))
        check("still busy" not in error_log(srv), "error log: %r" % error_log(srv)[-500:])
    finally:
        finish(srv)


# Every refused park (the kernel's epoll watch limit reached) wrote a
# warning: one line per idle connection for as long as the limit lasted.
@test("workers: refused parks are logged at most once a minute, with a count")
def _(shared):
    mark = park_mark(shared)
    with cowdtest.preloaded_faults(shared.root.tmp, FAULT_EPOLL_ONESHOT_ERRNO=str(errno.ENOSPC),
                                   FAULT_EPOLL_ONESHOT_MARK=mark):
        srv = start(shared.root, ["--workers", "1", "--keepalive-timeout", "60"])
    conns = []
    try:
        workers_of(srv, 1)
        for _ in range(8):
            c = srv.conn()
            conns.append(c)
            c.send(request("GET", "/hello.txt"))
            eq(c.response().body, HELLO, "response")
        wait_park_refusals(srv, mark, 8)
        lines = [l for l in error_log(srv).splitlines() if "park: epoll_ctl arming" in l]
        eq(len(lines), 1, "warnings for %d refused parks: %r" % (park_refusals(mark), lines))
        check("idle connections hold their handler threads" in lines[0], "warning: %r" % lines[0])
        for c in conns:
            c.send(request("GET", "/hello.txt"))
            eq(c.response().body, HELLO, "served on a connection the park refused")
        eq(stop(srv), 0, "master exit status")
    finally:
        for c in conns:
            c.close()
        finish(srv)

# A connection that had sent nothing when a graceful stop began, and was
# handed to a handler only then (queued behind busy handlers), was not
# taken for idle: its handler waited for a request until --header-timeout,
# and the worker for it until --shutdown-timeout.
@test("workers: a silent connection handed over after a graceful stop began is closed at once")
def _(shared):
    srv = start(shared.root, ["--workers", "1", "--threads", "1", "--defer-accept", "0",
                              "--header-timeout", "60", "--shutdown-timeout", "30"])
    try:
        workers_of(srv, 1)
        # the only handler waits for the rest of a request's head
        busy = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        busy.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: a\r\n")
        time.sleep(0.3)
        silent = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        time.sleep(0.3)                     # accepted, queued behind the busy handler
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        busy.sendall(b"Connection: close\r\n\r\n")
        busy.settimeout(10 * cowdtest.SLOW)
        raw = read_to_eof(busy)
        busy.close()
        check(raw.startswith(b"HTTP/1.1 200 OK") and raw.endswith(HELLO),
              "the request begun before the stop was served: %r" % raw[:200])
        t0 = time.time()
        silent.settimeout(5 * cowdtest.SLOW)
        try:
            eq(silent.recv(100), b"", "nothing sent to the silent connection")
        except socket.timeout:
            raise TestFailure("the silent connection still open %.1f s after the last reply"
                              % (time.time() - t0))
        except ConnectionResetError:
            pass
        silent.close()
        eq(stop_wait(srv, 5 * cowdtest.SLOW), 0, "master exit status")
        check(time.time() - t0 < 3.0 * cowdtest.SLOW, "exited %.1f s after the last reply"
              % (time.time() - t0))
    finally:
        finish(srv)


def signal_pending(pid, sig):
    """Is sig pending for the (stopped) process pid?"""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("ShdPnd:", "SigPnd:")) and int(line.split()[1], 16) & (1 << (sig - 1)):
                return True
    return False


# During a stop the master no longer looked at an old worker's deadline (an
# old worker told to stop after a SIGHUP, --shutdown-timeout + 5 s): one
# that outlived it was killed only at the master's own, later deadline, and
# until then the master woke every millisecond, the deadline in the past.
@test("workers: a stop kills an old worker at its own deadline")
def _(shared):
    srv = start(shared.root, ["--workers", "1", "--shutdown-timeout", "1"])
    old = None
    try:
        old = workers_of(srv, 1)[0]
        os.kill(old, signal.SIGSTOP)        # told to stop, it will not
        srv.proc.send_signal(signal.SIGHUP)
        # the new worker is ready once the master has told the old one to stop
        wait_for(lambda: signal_pending(old, signal.SIGTERM), 10 * cowdtest.SLOW,
                 "the old worker told to stop")
        time.sleep(3.5)                     # its deadline: 6 s after that
        srv.proc.send_signal(signal.SIGTERM)    # the master's own: 6 s from now
        t0 = time.time()
        eq(stop_wait(srv, 10 * cowdtest.SLOW), 0, "master exit status")
        check(time.time() - t0 < 4.0 * cowdtest.SLOW,
              "exited %.1f s after SIGTERM: the old worker was killed late" % (time.time() - t0))
        check("old worker %d did not stop within --shutdown-timeout + 5 s; killing it" % old
              in error_log(srv), "error log: %r" % error_log(srv)[-600:])
    finally:
        if old is not None:
            try:
                os.kill(old, signal.SIGCONT)
            except OSError:
                pass
        finish(srv)


# A second stop signal did nothing: Ctrl-C pressed again during a slow
# download left the server waiting out --shutdown-timeout (an hour, say), and
# only SIGKILL, which loses the access log's buffer, stopped it sooner.  (A
# first version took any stop signal a second after a worker's own stop for
# a second one: an old worker still finishing after a SIGHUP was cut by the
# first SIGTERM.)
@test("workers: a second SIGTERM stops at once, the access log written; the first leaves old workers finishing",
      needs=["--access-log"])
def _(shared):
    access = tempfile.mktemp(prefix="cowd-access-", dir=shared.root.tmp)
    srv = start(shared.root, ["--workers", "1", "--shutdown-timeout", "600", "--access-log", access])
    try:
        workers_of(srv, 1)
        eq(srv.get("/hello.txt").body, HELLO, "served")     # a line in the worker's buffer
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(request("GET", "/big.bin"))
        check(s.recv(1000), "the download began")   # then never read: it waits for room
        srv.proc.send_signal(signal.SIGHUP)         # the old worker stops, the download goes on
        workers_of(srv, 2, 10 * cowdtest.SLOW)
        time.sleep(1.2)
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(1.5)
        eq(srv.proc.poll(), None, "still stopping gracefully 1.5 s after the first SIGTERM")
        srv.proc.send_signal(signal.SIGTERM)
        t0 = time.time()
        eq(stop_wait(srv, 10 * cowdtest.SLOW), 0, "master exit status")
        check(time.time() - t0 < 3 * cowdtest.SLOW, "exited %.1f s after the second SIGTERM" % (time.time() - t0))
        s.close()
        with open(access, "rb") as f:
            check(b"GET /hello.txt" in f.read(), "the access log lost the buffered line")
        check("stopping now (asked twice)" in error_log(srv), "error log: %r" % error_log(srv)[-500:])
    finally:
        finish(srv)


def pipelined_stop(shared, sig):
    """A response in progress with the next request pipelined behind it (not
    yet read by the server) when sig arrives: the response must arrive whole.
    Before the fix the worker closed with that request unread, and the
    kernel's reset destroyed the tail of the response still in flight."""
    srv = start(shared.root, ["--workers", "1", "--shutdown-timeout", "30"])
    try:
        workers_of(srv, 1)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(10)
        s.connect(("127.0.0.1", srv.port))
        s.sendall(request("GET", "/big.bin"))
        got = bytearray(s.recv(1000))
        time.sleep(0.3)
        s.sendall(request("GET", "/hello.txt"))
        time.sleep(0.1)
        srv.proc.send_signal(sig)
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    break
                got += d
        except ConnectionResetError:
            raise TestFailure("connection reset after %d bytes of the response" % len(got))
        s.close()
        head, _, rest = bytes(got).partition(b"\r\n\r\n")
        check(head.startswith(b"HTTP/1.1 200 "), "status: %r" % head[:40])
        check(len(rest) >= BIG_SIZE, "body cut short: %d of %d bytes" % (len(rest), BIG_SIZE))
        block = shared.root.big_block
        for i in range(0, BIG_SIZE, len(block)):
            if rest[i:i + len(block)] != block:
                raise TestFailure("body differs in the MiB at %d" % i)
        # the pipelined request may be answered (with Connection: close) or not
        tail = rest[BIG_SIZE:]
        check(tail == b"" or tail.startswith(b"HTTP/1.1 200 "), "after the body: %r" % tail[:60])
    finally:
        finish(srv)


@test("workers: SIGTERM with a request pipelined behind a transfer: the transfer completes")
def _(shared):
    pipelined_stop(shared, signal.SIGTERM)


@test("workers: SIGHUP with a request pipelined behind a transfer: the transfer completes")
def _(shared):
    pipelined_stop(shared, signal.SIGHUP)


# SIGQUIT's default action killed the master at once (core, no log line),
# leaving its pid file behind; nginx takes it for a graceful stop.
@test("workers: SIGQUIT stops master and workers gracefully and removes the pid file")
def _(shared):
    pid_file = tempfile.mktemp(prefix="cowd-pid-", dir=shared.root.tmp)
    srv = start(shared.root, ["--workers", "2", "--pid-file", pid_file])
    try:
        workers_of(srv, 2)
        wait_for(lambda: os.path.exists(pid_file), 5, "the pid file")
        srv.proc.send_signal(signal.SIGQUIT)
        eq(stop_wait(srv), 0, "master exit status after SIGQUIT")
        check(not os.path.exists(pid_file), "the pid file is left behind")
        check("SIGQUIT: stopping gracefully" in error_log(srv), "the error log does not say why it stopped")
    finally:
        finish(srv)


@test("workers: after SIGTERM a request on a kept-alive connection gets Connection: close")
def _(shared):
    srv = start(shared.root, ["--workers", "1", "--shutdown-timeout", "5"])
    try:
        workers_of(srv, 1)
        with srv.conn() as c:
            # a pipelined pair whose second request is only completed after the stop
            c.send(request("GET", "/hello.txt") + b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n")
            eq(c.response().get("Connection"), None, "before the stop")
            srv.proc.send_signal(signal.SIGTERM)
            time.sleep(0.3)
            c.send(b"\r\n")
            r = c.response()
            eq(r.body, HELLO, "body after the stop")
            eq(r.get("Connection"), "close", "Connection after the stop")
            c.expect_closed()
        eq(srv.proc.wait(10), 0, "master exit status")
    finally:
        finish(srv)


def read_slowly(s):
    try:
        while s.recv(4096):
            time.sleep(0.05)
    except OSError:
        pass


def stop_refuses_new_clients(shared, args, n_held):
    """The one worker kept busy by n_held connections (the first a 20 MB
    download nobody reads, which keeps the stopping worker alive; the rest
    have begun a request head), its accept thread then waiting at
    --max-connections or for a free message: after SIGTERM a new client
    must be refused at once, not left in the listening socket's queue
    until the worker exits."""
    # the stop must outlast the new client's wait, or the worker's exit
    # would answer it (with a reset) on the old code too
    srv = start(shared.root, ["--workers", "1", "--shutdown-timeout", str(int(12 * cowdtest.SLOW)),
                              "--header-timeout", "60"] + args)
    held = []
    try:
        workers_of(srv, 1)
        for i in range(n_held):
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            if i == 0:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
                s.sendall(request("GET", "/big.bin"))
                # the download has begun (a slow start, valgrind's, could
                # else leave it queued, and the stop would end it unserved)
                got = 0
                while got < 65536:
                    d = s.recv(65536)
                    check(d, "the download ended early")
                    got += len(d)
                # then read on at about 80 KiB/s: above the pressure rule's
                # 16 KiB/s, so the download is never cut for stalling
                # (under valgrind the test outlasts its 2 s grace), and it
                # keeps the handler busy for minutes
                threading.Thread(target=read_slowly, args=(s,), daemon=True).start()
            else:
                s.sendall(b"GET /hello.txt HTTP/1.1\r\n")
            held.append(s)
            time.sleep(0.05)
        time.sleep(0.3 * cowdtest.SLOW)     # the accept thread is asleep at its limit
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.5 * cowdtest.SLOW)
        eq(srv.proc.poll(), None, "still stopping (a download in progress)")
        t0 = time.time()
        try:
            c = socket.create_connection(("127.0.0.1", srv.port), timeout=3 * cowdtest.SLOW)
        except ConnectionRefusedError:
            pass
        else:
            with c:
                # queued: at most a moment before the socket closes (the
                # code before waited on a busy handler, 1-1.5 s here)
                c.settimeout(0.5 * cowdtest.SLOW)
                try:
                    c.sendall(request("GET", "/hello.txt"))
                    got = c.recv(4096)
                except (ConnectionResetError, BrokenPipeError):
                    got = b""
                except socket.timeout:
                    raise TestFailure("a client that connected 0.5 s after SIGTERM had no answer after "
                                      "%.1f s: the stopping worker kept its listening socket open"
                                      % (time.time() - t0))
                check(not got.startswith(b"HTTP/1.1 200"), "a new client was served after SIGTERM")
        for s in held:          # the download and the heads end: the worker exits
            s.close()
        eq(stop_wait(srv), 0, "master exit status")
    finally:
        for s in held:
            s.close()
        finish(srv)


@test("workers: SIGTERM while the accept thread waits at --max-connections: new clients are refused at once")
def _(shared):
    # the first client takes the one connection allowed; the second waits in
    # the listen queue, and the accept thread at the cap for it
    stop_refuses_new_clients(shared, ["--max-connections", "1"], 2)


@test("workers: SIGTERM while the accept thread waits for a free handler: new clients are refused at once")
def _(shared):
    # one handler thread, 3 messages: the handler holds the first client
    # (its message back in the pool), the next three queue on the other
    # three, and the accept thread waits for a fourth
    stop_refuses_new_clients(shared, ["--threads", "1"], 4)


# ---------------------------------------------------------------------------
# access log
# ---------------------------------------------------------------------------

CLF = (r'(?P<host>[0-9a-fA-F.:]+) - - \[(?P<time>[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9]{2}:[0-9]{2}:[0-9]{2} '
       r'[+-][0-9]{4})\] "(?P<req>(?:[^"\\\x00-\x1f\x7f-\xff]|\\x[0-9A-F]{2})*)" '
       r'(?P<status>[0-9]{3}) (?P<bytes>[0-9]+)')
QUOTED = r'"(?:[^"\\\x00-\x1f\x7f-\xff]|\\x[0-9A-F]{2})*"'
COMMON_RE = re.compile(CLF + r"\n\Z")
COMBINED_RE = re.compile(CLF + r" (?P<ref>" + QUOTED + r") (?P<ua>" + QUOTED + r")\n\Z")


def fetch_from_threads(srv, n_threads, per, make_request):
    """n_threads clients at once, each sending per requests, make_request(t,
    i), on one kept-alive connection; every reply must be hello.txt's."""
    errors = []

    def client(t):
        try:
            with srv.conn() as c:
                for i in range(per):
                    c.send(make_request(t, i))
                    eq(c.response().body, HELLO, "body")
        except Exception as e:             # noqa: BLE001
            errors.append(e)
    ts = [threading.Thread(target=client, args=(t,)) for t in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    eq(errors[:2], [], "client errors")


def split_lines(data):
    """The lines of log bytes, each with its newline; the log must not end
    in a line cut off."""
    data = data.decode("latin-1")
    check(data == "" or data.endswith("\n"), "log does not end with a whole line")
    return [ln + "\n" for ln in data.split("\n")[:-1]]


def log_lines(path):
    with open(path, "rb") as f:
        return split_lines(f.read())


@test("workers: access log lines match the Combined grammar under load with 4 workers", needs=["--access-log"])
def _(shared):
    path = os.path.join(shared.root.tmp, "access-combined.log")
    srv = start(shared.root, ["--workers", "4", "--access-log", path])
    try:
        workers_of(srv, 4)
        n_threads, per = 8, 150
        # quote, tab, obs-text, backslash in the User-Agent
        fetch_from_threads(srv, n_threads, per, lambda t, i: request(
            "GET", "/hello.txt?t=%d&i=%d" % (t, i),
            [("User-Agent", 'ua"%d\t\xe9\\%d' % (t, i)), ("Referer", "http://r/%d" % i)]))
        srv.get("/nope", [("User-Agent", "a\x7fb")], common=False)     # 400 (DEL): logged too
        eq(stop(srv), 0, "master exit status")
        lines = log_lines(path)
        eq(len(lines), n_threads * per + 1, "log lines")
        seen = set()
        for ln in lines:
            m = COMBINED_RE.match(ln)
            check(m is not None, "line does not match the Combined grammar: %r" % ln)
            mm = re.match(r'GET /hello\.txt\?t=([0-9]+)&i=([0-9]+) HTTP/1\.1$', m.group("req"))
            if mm:
                t, i = mm.groups()
                eq(m.group("ua"), '"ua\\x22%s\\x09\\xE9\\x5C%s"' % (t, i), "escaped User-Agent")
                eq(m.group("ref"), '"http://r/%s"' % i, "Referer")
                eq(m.group("status"), "200", "status")
                check(int(m.group("bytes")) > len(HELLO), "bytes %s" % m.group("bytes"))
                seen.add((t, i))
            else:
                eq(m.group("req"), "GET /nope HTTP/1.1", "request line of the 400")
                check(m.group("ua") in ('"a\\x7Fb"', '"-"'), "escaped DEL: %s" % m.group("ua"))
                eq(m.group("status"), "400", "status of /nope with a DEL in a field")
        eq(len(seen), n_threads * per, "distinct requests logged")
    finally:
        finish(srv)


# The version was parsed before the target was noted: a request refused for
# its version (505, or 400 for a malformed one) was logged as "-", the lines
# most worth reading in a log.
@test("workers: a request refused for its HTTP version is logged with its method and target",
      needs=["--access-log"])
def _(shared):
    path = os.path.join(shared.root.tmp, "access-version.log")
    srv = start(shared.root, ["--access-log", path])
    try:
        for line, status in ((b"GET /v2 HTTP/2.0", 505), (b"GET /v1x HTTP/1.1x", 400)):
            r, c = srv.raw(line + b"\r\nHost: a\r\n\r\n")
            c.close()
            eq(r.status, status, line.decode())
        eq(stop(srv), 0, "master exit status")
        got = [COMBINED_RE.match(ln) for ln in log_lines(path)]
        check(all(got), "lines match the Combined grammar: %r" % log_lines(path))
        eq([(m.group("req"), m.group("status")) for m in got],
           [("GET /v2 HTTP/2.0", "505"), ("GET /v1x", "400")], "request and status logged")
    finally:
        finish(srv)


def start_with_file_limit(shared, name, limit):
    """A server logging to name in the test directory, under an
    RLIMIT_FSIZE of limit bytes: (server, log path)."""
    path = os.path.join(shared.root.tmp, name)

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return start(shared.root, ["--access-log", path], preexec=small_files), path


@test("workers: an access log at the file size limit loses lines, and no worker dies",
      needs=["--access-log"])
def _(shared):
    # Before: the write past RLIMIT_FSIZE raised SIGXFSZ, which killed the
    # worker at its next flush, and the restarted one again at its own.
    limit = 4096
    srv, path = start_with_file_limit(shared, "access-fsize.log", limit)
    try:
        for _ in range(3):
            log_batch(srv, "i", 60)         # ~150 bytes a line: twice the limit
        died = cowdtest.WORKER_DIED.search(error_log(srv))
        check(died is None, "a worker died: %s" % (died and died.group(0)))
        check("access log" in error_log(srv), "the lost lines are not reported: %r" % error_log(srv)[-500:])
        eq(srv.get("/hello.txt").body, HELLO, "served after the log filled up")
        check(os.path.getsize(path) <= limit, "log beyond the limit: %d" % os.path.getsize(path))
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


def log_batch(srv, tag, n):
    """n requests tagged tag, then time for the access log's flush."""
    for i in range(n):
        eq(srv.get("/hello.txt?%s=%d" % (tag, i)).body, HELLO, "body")
    time.sleep(1.5)                         # flushed at least once a second


def cut_a_line(srv, path, limit):
    """Fills the log at path up to the file size limit, which cuts a line;
    returns a length to truncate it to that keeps a whole line and 20 bytes
    of the next, cut."""
    log_batch(srv, "fill", 60)              # ~150 bytes a line: past the limit, a line cut
    with open(path, "rb") as f:
        data = f.read()
    check(len(data) == limit and not data.endswith(b"\n"),
          "the limit cuts a line (%d bytes, ends %r)" % (len(data), data[-20:]))
    return data.index(b"\n") + 1 + 20


def check_cut_line_ended(path, keep, n, tag):
    """The log truncated to keep bytes: its cut line ended alone, then n
    whole lines with tag."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data[keep - 20:].split(b"\n")
    eq(lines[0], data[keep - 20:keep], "the cut line, ended alone")
    later = split_lines(data[keep + 1:])
    eq(len(later), n, "lines written once there was room: %r" % later[:2])
    for ln in later:
        check(COMBINED_RE.match(ln) and tag in ln, "a whole line: %r" % ln)


# A write past the limit cut a line; at the next flush the newline that ends
# it failed too, and the failed line writes after it cleared the mark of the
# cut: once there was room again (the log truncated, or the disk freed), the
# next line was glued onto the cut one.
@test("workers: an access log line cut by a full log is ended before the lines written once "
      "there is room again", needs=["--access-log"])
def _(shared):
    limit = 4096
    srv, path = start_with_file_limit(shared, "access-cut.log", limit)
    try:
        keep = cut_a_line(srv, path, limit)
        log_batch(srv, "full", 5)           # the log full: newline and lines both fail
        os.truncate(path, keep)             # room again; the file ends in a cut line still
        log_batch(srv, "room", 5)
        eq(stop(srv), 0, "master exit status")
        check_cut_line_ended(path, keep, 5, "room=")
    finally:
        finish(srv)


LOST_RE = re.compile(r"access log \S+: (?:write, )?(\d+) bytes of log lines lost"
                     r"(?:, failed writes: (\d+) since the last report| \(failed writes since last logged: (\d+)\))")


# The line a minute about a full log counted only the bytes of the flush it
# fell on, and the failures after it within the minute were never told when
# the worker stopped (or when the disk was freed within the minute).
@test("workers: an access log's lost lines are all told, bytes and failed writes, by the time "
      "the worker stops", needs=["--access-log"])
def _(shared):
    limit = 4096
    srv, path = start_with_file_limit(shared, "access-lost.log", limit)
    try:
        batches = [("fill", 60)] + [("full", 5)] * 3
        cut_a_line(srv, path, limit)        # the first failure: told at once
        for tag, n in batches[1:]:
            log_batch(srv, tag, n)          # three more flushes within the minute, all lost
        eq(stop(srv), 0, "master exit status")
        with open(path, "rb") as f:
            data = f.read()
        template = data[:data.index(b"\n") + 1]
        check(b"?fill=0 " in template, "the first line is fill=0's: %r" % template)
        base = len(template) - len("fill=0")
        written = sum(base + len("%s=%d" % (tag, i)) for tag, n in batches for i in range(n))
        check("worker exiting" in error_log(srv), "the error log (%d bytes, under the same file size "
              "limit) lacks the worker's last line: %r" % (len(error_log(srv)), error_log(srv)[-300:]))
        told = [m.groups() for m in LOST_RE.finditer(error_log(srv))]
        check(told, "no line tells of lost lines: %r" % error_log(srv)[-500:])
        eq(sum(int(b) for b, _, _ in told), written - len(data),
           "bytes of log lines told lost (lines %r)" % told)
        failures = sum(int(f1 or f2) for _, f1, f2 in told)
        check(failures >= len(batches), "failed writes told: %d, fewer than the %d flushes that "
              "failed (lines %r)" % (failures, len(batches), told))
    finally:
        finish(srv)


# A SIGUSR1 once the disk had room again, the log not renamed (the same
# file reopened): the reopen wrote out the buffer, which was empty, so the
# newline that ends the cut line was never written, and the reopen forgot
# the cut: the next line was glued onto it.
@test("workers: an access log line cut by a full log is ended when the same file is reopened",
      needs=["--access-log"])
def _(shared):
    limit = 4096
    srv, path = start_with_file_limit(shared, "access-cut-reopen.log", limit)
    try:
        keep = cut_a_line(srv, path, limit)
        os.truncate(path, keep)             # room again; the file ends in a cut line still
        reopened = error_log(srv).count("SIGUSR1: reopening log files")
        srv.proc.send_signal(signal.SIGUSR1)     # nothing buffered: the workers' buffers are empty
        wait_for(lambda: error_log(srv).count("SIGUSR1: reopening log files") > reopened,
                 5 * cowdtest.SLOW, "the master's reopen")
        time.sleep(0.5)                     # the workers reopen as the master's signal reaches them
        log_batch(srv, "room", 5)
        eq(stop(srv), 0, "master exit status")
        check_cut_line_ended(path, keep, 5, "room=")
    finally:
        finish(srv)


def fifo_reader(fifo, got, chunk=65536, pause=0):
    """A thread (not started) that reads the FIFO to its end into got,
    chunk bytes at a time, pausing between reads."""
    def read():
        with open(fifo, "rb") as f:
            while True:
                b = f.read1(chunk)
                if not b:
                    return
                got.append(b)
                time.sleep(pause)
    return threading.Thread(target=read, daemon=True)


def piped_log_lines(shared, name, n_threads, per, make_request):
    """The access log lines of 2 workers writing to a FIFO read slowly (so
    the pipe stays full), while n_threads clients send per requests each."""
    fifo = os.path.join(shared.root.tmp, name)
    os.mkfifo(fifo)
    got = []
    rt = fifo_reader(fifo, got, chunk=1024, pause=0.005)
    rt.start()
    srv = start(shared.root, ["--workers", "2", "--access-log", fifo])
    try:
        workers_of(srv, 2)
        fetch_from_threads(srv, n_threads, per, make_request)
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)
        rt.join(30)
    lines = split_lines(b"".join(got))
    eq(len(lines), n_threads * per, "log lines")
    bad = [ln for ln in lines if COMBINED_RE.match(ln) is None]
    check(not bad, "%d of %d lines cut or mixed, e.g. %r" % (len(bad), len(lines), bad[:1]))
    return lines


@test("workers: an access log that is a pipe gets whole lines from every worker",
      needs=["--access-log"])
def _(shared):
    # A pipe takes a write whole only up to PIPE_BUF bytes.  Before, each
    # worker wrote up to 64 KiB at once, and with the pipe full two workers'
    # writes were split around each other, cutting lines.
    pad = "p" * 900                         # ~1.1 KB lines: a flush is many pipe buffers
    piped_log_lines(shared, "access.fifo", 6, 100,
                    lambda t, i: request("GET", "/hello.txt?t=%d&i=%d&%s" % (t, i, pad)))


@test("workers: an access log that is a pipe gets long lines cut to fit in PIPE_BUF",
      needs=["--access-log"])
def _(shared):
    # Before: a line with long client-given fields (~7 KB here) went to the
    # pipe in one write of more than PIPE_BUF bytes, which the pipe may split
    # around another worker's write; the man page promised whole lines.
    import select
    lines = piped_log_lines(shared, "access-long.fifo", 4, 25, lambda t, i: request(
        "GET", "/hello.txt?t=%d&i=%d&%s" % (t, i, "q" * 1500),
        [("Referer", "http://r.example/" + "R" * 3000), ("User-Agent", "U" * 3000)]))
    longest = max(len(ln) for ln in lines)
    check(longest <= select.PIPE_BUF, "a line of %d bytes, more than PIPE_BUF (%d)" % (longest, select.PIPE_BUF))
    m = COMBINED_RE.match(lines[0])
    check(m.group("ua").endswith('..."') and m.group("ref").endswith('..."'),
          "long fields not marked as cut: %r" % lines[0][:200])


@test("workers: --log-format common", needs=["--access-log"])
def _(shared):
    path = os.path.join(shared.root.tmp, "access-common.log")
    srv = start(shared.root, ["--access-log", path, "--log-format", "common"])
    try:
        eq(srv.get("/hello.txt").body, HELLO, "body")
        time.sleep(1.5)                         # flushed at least once a second
        lines = log_lines(path)
        eq(len(lines), 1, "lines flushed by the 1 s timer")
        check(COMMON_RE.match(lines[0]) is not None, "not Common Log Format: %r" % lines[0])
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


@test("workers: access log: unanswered requests, 408 and aborted transfers are logged as they went",
      needs=["--access-log"])
def _(shared):
    # Before: a request left unanswered (its body never came) was logged with
    # the previous response's status; a 408 was not logged at all; a transfer
    # the client abandoned was logged with only the header's bytes.
    path = os.path.join(shared.root.tmp, "access-truth.log")
    srv = start(shared.root, ["--access-log", path, "--log-format", "common",
                              "--header-timeout", "1", "--body-timeout", "1"])
    try:
        c = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        c.sendall(request("GET", "/no/such/file"))
        time.sleep(0.3)
        check(c.recv(65536).startswith(b"HTTP/1.1 404 "), "first response")
        c.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        time.sleep(0.2)
        c.close()                               # the body never comes
        # a body that stalls past --body-timeout: 408, with its request line
        with cowdtest.Conn(srv.port) as c:
            c.send(b"GET /stalled HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
            data = c.read_to_eof()
        check(data.startswith(b"HTTP/1.1 408 "), "408 for the stalled body: %r" % data[:40])
        # a head that never completes: 408
        with cowdtest.Conn(srv.port) as c:
            c.send(b"GET /hello.txt HTTP/1.1\r\nHost: x\r\n")
            data = c.read_to_eof()
        check(data.startswith(b"HTTP/1.1 408 "), "408: %r" % data[:40])
        # a 20 MB transfer abandoned after a few MB
        c = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        c.sendall(request("GET", "/big.bin"))
        got = 0
        while got < 3 * 1024 * 1024:
            d = c.recv(65536)
            check(d, "closed early")
            got += len(d)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        c.close()                               # reset: the send fails
        def lines_now():
            ls = log_lines(path)
            return ls if len(ls) >= 5 else None
        lines = wait_for(lines_now, 10, "five access log lines")
        fields = [COMMON_RE.match(l) for l in lines]
        check(all(fields), "not Common Log Format: %r" % lines)
        eq([(m.group("req"), m.group("status")) for m in fields],
           [("GET /no/such/file HTTP/1.1", "404"), ("GET /hello.txt HTTP/1.1", "499"),
            ("GET /stalled HTTP/1.1", "408"), ("-", "408"), ("GET /big.bin HTTP/1.1", "200")],
           "requests and statuses")
        sent = int(fields[4].group("bytes"))
        check(got <= sent < BIG_SIZE, "bytes logged for the abandoned transfer: %d (client read %d)"
              % (sent, got))
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


@test("workers: SIGUSR1 after moving the access log: old lines stay, new ones go to the new file", needs=["--access-log"])
def _(shared):
    d = tempfile.mkdtemp(prefix="cowd-rot-", dir=shared.root.tmp)
    os.chmod(d, 0o755)
    path = os.path.join(d, "access.log")
    err = os.path.join(d, "error.log")
    srv = Server(shared.root, ["--workers", "2", "--access-log", path, "--error-log", err])
    srv.err_log = err
    srv.start()
    try:
        workers_of(srv, 2)
        for i in range(5):
            srv.get("/hello.txt?before=%d" % i)
        os.rename(path, path + ".1")
        os.rename(err, err + ".1")
        for i in range(3):
            srv.get("/hello.txt?moved=%d" % i)      # still written to the moved file
        srv.proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: os.path.exists(path) and os.path.exists(err), 3, "the new log files")
        time.sleep(0.3)
        for i in range(4):
            srv.get("/hello.txt?after=%d" % i)
        eq(stop(srv), 0, "master exit status")
        old = "".join(log_lines(path + ".1"))
        new = "".join(log_lines(path))
        eq(len(re.findall(r"before=", old)) + len(re.findall(r"moved=", old)), 8, "lines in the moved file")
        eq(re.findall(r"after=", old), [], "new lines in the moved file")
        eq(len(re.findall(r"after=", new)), 4, "lines in the new file")
        eq(re.findall(r"before=|moved=", new), [], "old lines in the new file")
        if os.geteuid() == 0:
            # started as root without --user, the workers run as nobody
            eq(os.stat(path).st_uid, pwd_uid("nobody"), "owner of the reopened log")
        with open(err, "rb") as f:
            check(b"worker exiting" in f.read(), "workers did not reopen the error log")
    finally:
        finish(srv)


# A log path that is a symbolic link when cowd starts is the administrator's
# choice: SIGUSR1 follows it again (a path that was not a link is not
# followed when reopened: see the CVE-2016-1247 test).  A file reached through
# a link is never given to the workers' user: as root, the new targets are
# made theirs beforehand, as an administrator would.
@test("workers: SIGUSR1 follows log paths that were symbolic links at start to their new targets",
      needs=["--access-log"])
def _(shared):
    d = tempfile.mkdtemp(prefix="cowd-linked-", dir=shared.root.tmp)
    os.chmod(d, 0o777)
    path, err = os.path.join(d, "access.log"), os.path.join(d, "error.log")
    os.symlink("access-1.log", path)
    os.symlink("error-1.log", err)
    if os.geteuid() == 0:
        for name in ("access-2.log", "error-2.log"):
            open(os.path.join(d, name), "wb").close()
            os.chown(os.path.join(d, name), pwd_uid("nobody"), -1)
    srv = Server(shared.root, ["--workers", "1", "--access-log", path, "--error-log", err])
    srv.err_log = err
    srv.start()
    try:
        srv.get("/hello.txt?first")
        for link in (path, err):
            os.unlink(link)
            os.symlink(os.path.basename(link).replace(".log", "-2.log"), link)
        srv.proc.send_signal(signal.SIGUSR1)
        # the workers reopen when their signal comes: probe until a line
        # reaches the new target (the access log is flushed once a second)
        probes = iter(range(1000))
        wait_for(lambda: srv.get("/hello.txt?probe%d" % next(probes)) and
                 "?probe" in "".join(log_lines(os.path.join(d, "access-2.log"))),
                 10 * cowdtest.SLOW, "a line in the new access log", step=0.2)
        srv.get("/hello.txt?second")
        eq(stop(srv), 0, "master exit status")
        first = "".join(log_lines(os.path.join(d, "access-1.log")))
        second = "".join(log_lines(os.path.join(d, "access-2.log")))
        check("?first" in first and "?second" not in first, "first target: %r" % first)
        check("?second" in second and "?first" not in second, "second target: %r" % second)
        with open(os.path.join(d, "error-2.log"), "rb") as f:
            logged = f.read()
        check(b"worker exiting" in logged, "the error log's new target: %r" % logged[-300:])
        check(b"cannot reopen" not in logged, "reopen errors: %r" % logged[-300:])
    finally:
        finish(srv)


def proc_state(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return next(l.split()[1] for l in f if l.startswith("State:"))
    except (OSError, StopIteration):
        return None


# The master reaped a dead worker before reading the pipe where the worker
# had said it was ready: a first worker stopped (SIGTERM, exit 0) in that
# moment was taken for one that could not start, and the master gave up
# and took the whole server down.  The master is held (SIGSTOP) to open the
# moment wide.
@test("workers: a worker stopped just after it said it was ready is restarted, not taken for a failed start")
def _(shared):
    srv = start(shared.root, ["--workers", "1", "--log-level", "debug"])
    try:
        w = workers_of(srv, 1)[0]
        srv.proc.send_signal(signal.SIGSTOP)
        try:
            wait_for(lambda: "worker ready" in error_log(srv), 5 * cowdtest.SLOW, "the worker to be ready")
            time.sleep(0.1)             # its word is in the pipe
            os.kill(w, signal.SIGTERM)
            wait_for(lambda: proc_state(w) in ("Z", None), 5 * cowdtest.SLOW, "the worker to exit")
        finally:
            srv.proc.send_signal(signal.SIGCONT)
        time.sleep(0.5)
        check(srv.proc.poll() is None, "the master gave up: %s" % error_log(srv)[-600:])
        new = workers_of(srv, 1, timeout=15)
        check(new[0] != w, "no new worker")
        eq(srv.get("/hello.txt").body, HELLO, "served by the new worker")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


# --workers 0 counted every online CPU, also those the process may not run on
# (taskset, a container's cpuset): two workers then shared one CPU.
@test("workers: --workers 0 starts one worker per CPU the process may run on")
def _(shared):
    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        raise TestSkip("needs sched_getaffinity and at least 2 CPUs")
    for cpus in ({min(os.sched_getaffinity(0))}, os.sched_getaffinity(0)):
        srv = start(shared.root, ["--workers", "0"],
                    preexec=lambda cpus=cpus: os.sched_setaffinity(0, cpus))
        try:
            workers_of(srv, len(cpus))
            time.sleep(0.3)
            eq(len(children(srv.proc.pid)), len(cpus), "workers for %d allowed CPUs" % len(cpus))
            eq(srv.get("/hello.txt").body, HELLO, "served")
            eq(stop(srv), 0, "master exit status")
        finally:
            finish(srv)


# ---------------------------------------------------------------------------
# credentials, daemon
# ---------------------------------------------------------------------------

def need_root():
    if os.geteuid() != 0:
        raise TestSkip("needs root")


def pwd_uid(name):
    import pwd
    return pwd.getpwnam(name).pw_uid


def readable_root(root):
    """nobody must be able to read the test tree."""
    p = root.path
    while p != "/":
        os.chmod(p, os.stat(p).st_mode | 0o005)
        p = os.path.dirname(p)


@test("workers: --user nobody: workers run as nobody, the master as root")
def _(shared):
    need_root()
    readable_root(shared.root)
    srv = start(shared.root, ["--workers", "2", "--user", "nobody"])
    try:
        pids = workers_of(srv, 2)
        import pwd
        nobody = pwd.getpwnam("nobody").pw_uid
        for p in pids:
            eq(settled_uid(p, [nobody] * 4), [nobody] * 4, "Uid of worker %d" % p)
        eq(uid_of(srv.proc.pid)[0], 0, "Uid of the master")
        eq(srv.get("/hello.txt").body, HELLO, "served as nobody")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


@test("workers: started as root without --user: workers are nobody, said once")
def _(shared):
    need_root()
    readable_root(shared.root)
    srv = start(shared.root, ["--workers", "3"])
    try:
        pids = workers_of(srv, 3)
        import pwd
        nobody = pwd.getpwnam("nobody").pw_uid
        for p in pids:
            eq(settled_uid(p, [nobody] * 4)[0], nobody, "Uid of worker %d" % p)
        eq(stop(srv), 0, "master exit status")
        eq(len(re.findall(r"without --user: workers run as nobody", error_log(srv))), 1,
           "times the error log says so")
    finally:
        finish(srv)


def private_etc(files):
    """preexec_fn: the child sees each file files[name] as name (/etc/group,
    /etc/passwd; a private mount namespace: nothing outside the child
    changes)."""
    libc = ctypes.CDLL(None, use_errno=True)
    CLONE_NEWNS, MS_BIND, MS_REC, MS_PRIVATE = 0x20000, 4096, 16384, 1 << 18

    def preexec():
        if (libc.unshare(CLONE_NEWNS) != 0 or
                libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0):
            os._exit(111)
        for name, path in files.items():
            if libc.mount(path.encode(), name.encode(), None, MS_BIND, None) != 0:
                os._exit(111)
    return preexec


def etc_with(shared, name, line):
    """A copy of /etc/NAME with line added, readable by all: its path."""
    path = os.path.join(shared.root.tmp, "etc-" + name)
    with open("/etc/" + name) as f, open(path, "w") as out:
        out.write(f.read().rstrip("\n") + "\n" + line + "\n")
    os.chmod(path, 0o644)
    return path


def unused_gid():
    return next(g for g in range(4243, 60000) if g not in {e.gr_gid for e in grp.getgrall()})


def worker_groups(pid):
    with open("/proc/%d/status" % pid) as f:
        return next(l for l in f if l.startswith("Groups:")).split()[1:]


# The workers got only their primary group (setgroups(1, ...)): a file
# readable through one of the --user's supplementary groups was 403, where
# nginx and Apache (initgroups) serve it.
@test("workers: --user keeps the user's supplementary groups, as initgroups does")
def _(shared):
    need_root()
    readable_root(shared.root)
    gid = unused_gid()
    preexec = private_etc({"/etc/group": etc_with(shared, "group", "cowdsupp:x:%d:nobody" % gid)})
    # asked as cowd will ask (getgrouplist, through NSS: nscd or sssd may not read the file)
    probe = subprocess.run(["id", "-G", "nobody"], preexec_fn=preexec, capture_output=True)
    if probe.returncode != 0 or str(gid).encode() not in probe.stdout.split():
        raise TestSkip("cannot give nobody a private supplementary group here")
    shared.root.write("suppl/group-only.txt", b"for the group\n")
    path = os.path.join(shared.root.path, "suppl/group-only.txt")
    os.chown(path, 0, gid)
    os.chmod(path, 0o640)
    srv = start(shared.root, ["--workers", "1", "--user", "nobody"], preexec=preexec)
    try:
        pid = workers_of(srv, 1)[0]
        settled_uid(pid, [pwd_uid("nobody")] * 4)
        groups = worker_groups(pid)
        check(str(gid) in groups, "the worker's groups %s lack nobody's supplementary group %d" % (groups, gid))
        r = srv.get("/suppl/group-only.txt")
        eq(r.status, 200, "a file readable by a supplementary group of --user")
        eq(r.body, b"for the group\n", "body")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


# --user's name was cut to 63 bytes before its groups were looked up by it:
# a longer one (directory services have them) lost its supplementary groups.
@test("workers: a --user name of 70 bytes keeps its supplementary groups")
def _(shared):
    need_root()
    readable_root(shared.root)
    import pwd
    nobody = pwd.getpwnam("nobody")
    name = "cowd-long-user-" + "x" * 55
    gid = unused_gid()
    preexec = private_etc({
        "/etc/passwd": etc_with(shared, "passwd", "%s:x:%d:%d::/nonexistent:/usr/sbin/nologin"
                                % (name, nobody.pw_uid, nobody.pw_gid)),
        "/etc/group": etc_with(shared, "group", "cowdlong:x:%d:%s" % (gid, name))})
    probe = subprocess.run(["id", "-G", name], preexec_fn=preexec, capture_output=True)
    if probe.returncode != 0 or str(gid).encode() not in probe.stdout.split():
        raise TestSkip("cannot add a user with a supplementary group here")
    srv = start(shared.root, ["--workers", "1", "--user", name], preexec=preexec)
    try:
        pid = workers_of(srv, 1)[0]
        settled_uid(pid, [nobody.pw_uid] * 4)
        groups = worker_groups(pid)
        check(str(gid) in groups, "the worker's groups %s lack the user's supplementary group %d"
              % (groups, gid))
        eq(srv.get("/hello.txt").body, HELLO, "served")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


# Started as root, cowd gave its logs to --user by path: chown followed
# /dev/stderr to the terminal or pipe behind it (a terminal stayed owned by
# nobody after cowd exited).  Only regular files are given now.
@test("workers: started as root, only log files that are regular files are given to --user",
      needs=["--access-log"])
def _(shared):
    need_root()
    readable_root(shared.root)
    port = cowdtest.free_port()
    access_file = tempfile.mktemp(prefix="cowd-access-", dir=shared.root.tmp)
    for access_log in ("/dev/stdout", access_file):
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:%d" % port, "--root", shared.root.path,
                              "--workers", "1", "--user", "nobody", "--error-log", "/dev/stderr",
                              "--access-log", access_log], stdout=out_w, stderr=err_w)
        os.close(out_w)
        os.close(err_w)
        try:
            eq(first_get(p, port).body, HELLO, "served")
            eq(os.fstat(err_r).st_uid, 0, "owner of the pipe behind --error-log /dev/stderr")
            if access_log == "/dev/stdout":
                eq(os.fstat(out_r).st_uid, 0, "owner of the pipe behind --access-log /dev/stdout")
            else:
                eq(os.stat(access_file).st_uid, pwd_uid("nobody"), "owner of the access log file")
            # SIGUSR1: a pipe has nothing to rotate, and the workers may not open it
            p.send_signal(signal.SIGUSR1)
            time.sleep(0.5)
            eq(get_one(port, "/hello.txt").body, HELLO, "served after SIGUSR1")
            os.set_blocking(err_r, False)
            logged = os.read(err_r, 1 << 20).decode("utf-8", "replace")
            check("SIGUSR1" in logged, "the error log lost after SIGUSR1: %r" % logged[-300:])
            check("cannot reopen" not in logged, "reopen errors: %r" % logged[-400:])
            p.send_signal(signal.SIGTERM)
            eq(p.wait(15), 0, "master exit status")
        finally:
            kill_all(p)
            os.close(out_r)
            os.close(err_r)


def nobodys_log_dir(shared, prefix):
    """As root: (nobody's uid, a new log directory nobody owns and may write)."""
    need_root()
    readable_root(shared.root)
    nobody = pwd_uid("nobody")
    logdir = tempfile.mkdtemp(prefix=prefix, dir=shared.root.tmp)
    os.chmod(logdir, 0o755)
    os.chown(logdir, nobody, -1)
    return nobody, logdir


# Started as root with --user, cowd gave its logs to the workers' user through
# whatever the path named, and the master reopened them as root following
# symbolic links: a link to another file put in a log directory that user may
# write (a hard link beforehand, a symbolic or hard link at rotation) made the
# master give that file away and append log lines to it (nginx's
# CVE-2016-1247), and a FIFO put there hung the master's reopen for good.
@test("workers: a log path that is a link to another file or a FIFO is refused at start, not given, not reopened",
      needs=["--access-log"])
def _(shared):
    nobody, logdir = nobodys_log_dir(shared, "cowd-logdir-")

    def victim(name):
        path = os.path.join(shared.root.tmp, "cowd-victim-%s-%d" % (name, os.getpid()))
        with open(path, "wb") as f:
            f.write(b"secret\n")
        os.chmod(path, 0o600)
        return path
    access = os.path.join(logdir, "access.log")
    err = os.path.join(logdir, "error.log")
    # At start, as root: a file with a second name (a hard link made before
    # the start), or a symbolic link another user made, is refused; the
    # master once appended its log lines to what it named, as root.
    hard = victim("hard")
    os.link(hard, access)
    sym_start = victim("symstart")
    os.symlink(sym_start, err)
    os.lchown(err, nobody, -1)
    for flag, path, why in (("--access-log", access, "has 2 names"),
                            ("--error-log", err, "symbolic link made by uid %d" % nobody)):
        run = subprocess.run([cowdtest.COWD, "--listen", "127.0.0.1:%d" % cowdtest.free_port(),
                              "--root", shared.root.path, "--workers", "1", "--user", "nobody", flag, path],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=10 * cowdtest.SLOW)
        eq(run.returncode, 1, "exit status with %s %s" % (flag, why))
        check(why.encode() in run.stderr and path.encode() in run.stderr,
              "message for %s %s: %r" % (flag, why, run.stderr[-400:]))
    for path in (hard, sym_start):
        eq(os.stat(path).st_uid, 0, "owner of the file a log at start was linked to")
        with open(path, "rb") as f:
            eq(f.read(), b"secret\n", "the file a log at start was linked to")
    os.unlink(access)
    os.unlink(err)
    port = cowdtest.free_port()
    p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:%d" % port, "--root", shared.root.path,
                          "--workers", "1", "--user", "nobody", "--error-log", err, "--access-log", access],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        eq(first_get(p, port).body, HELLO, "served")
        eq(os.stat(access).st_uid, nobody, "owner of the access log, a file of its own")
        eq(os.stat(err).st_uid, nobody, "owner of the error log, a file of its own")
        # rotations, each with something else where the log was: a symbolic
        # link, a hard link (made by root here: Linux's protected_hardlinks
        # stops other users, the BSDs do not), a FIFO
        os.rename(err, err + ".1")

        def refused_reopens():
            with open(err + ".1", "rb") as f:
                return f.read().decode("utf-8", "replace").count("cannot reopen error log %s" % err)
        sym, hard2 = victim("sym"), victim("hard2")
        for what, make in (("symbolic link", lambda: os.symlink(sym, err)),
                           ("hard link", lambda: os.link(hard2, err)),
                           ("FIFO", lambda: os.mkfifo(err, 0o666))):
            if os.path.lexists(err):
                os.unlink(err)
            make()
            before = refused_reopens()
            p.send_signal(signal.SIGUSR1)
            wait_for(lambda: refused_reopens() > before, 5 * cowdtest.SLOW,
                     "the master's refusal to reopen the error log as a %s" % what)
            eq(get_one(port, "/hello.txt").body, HELLO, "served after SIGUSR1 with a %s" % what)
        for path in (sym, hard2):
            eq(os.stat(path).st_uid, 0, "owner of the file the error log was linked to at rotation")
            with open(path, "rb") as f:
                eq(f.read(), b"secret\n", "the file the error log was linked to")
        p.send_signal(signal.SIGTERM)
        eq(p.wait(15), 0, "master exit status")
    finally:
        kill_all(p)


# A log path that was a symbolic link root made at start was followed at
# each reopen, whoever had replaced the link (or put a link where it
# pointed) meanwhile: with the log directory writable by the workers' user,
# that user could have the master, as root, create or append to any file
# at the next rotation.  Links are followed only if root made them, at start
# (a chain too) and at every reopen.
@test("workers: a root-made log link is not followed through a link another user made, "
      "at start or when reopened", needs=["--access-log"])
def _(shared):
    nobody, logdir = nobodys_log_dir(shared, "cowd-linkdir-")
    victims = tempfile.mkdtemp(prefix="cowd-victims-", dir=shared.root.tmp)   # root's, 0700
    access, err = os.path.join(logdir, "access.log"), os.path.join(logdir, "error.log")

    def user_link(target, path):
        os.symlink(target, path)
        os.lchown(path, nobody, -1)

    # at start: root's link to a link nobody made
    os.symlink("error-next.log", err)
    user_link(os.path.join(victims, "start"), os.path.join(logdir, "error-next.log"))
    run = subprocess.run([cowdtest.COWD, "--listen", "127.0.0.1:%d" % cowdtest.free_port(),
                          "--root", shared.root.path, "--workers", "1", "--user", "nobody",
                          "--error-log", err], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         timeout=10 * cowdtest.SLOW)
    eq(run.returncode, 1, "exit status with a log link through nobody's link")
    check(b"goes through %s, a symbolic link made by uid %d" % (
        os.path.join(logdir, "error-next.log").encode(), nobody) in run.stderr,
        "message: %r" % run.stderr[-400:])
    check(not os.path.lexists(os.path.join(victims, "start")), "root created the file nobody's link named")
    for name in ("error.log", "error-next.log"):
        os.unlink(os.path.join(logdir, name))

    # at rotation: root's links, each targets a file of its own at start
    for path, first in ((access, "access-1.log"), (err, "error-1.log")):
        open(os.path.join(logdir, first), "wb").close()
        os.chown(os.path.join(logdir, first), nobody, -1)
        os.symlink(first, path)
    port = cowdtest.free_port()
    p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:%d" % port, "--root", shared.root.path,
                          "--workers", "1", "--user", "nobody", "--error-log", err, "--access-log", access],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        eq(first_get(p, port).body, HELLO, "served")
        # nobody replaces the error log's link with one of its own, and puts
        # a link of its own where the access log's link points
        os.unlink(err)
        user_link(os.path.join(victims, "error"), err)
        os.unlink(os.path.join(logdir, "access-1.log"))
        user_link(os.path.join(victims, "access"), os.path.join(logdir, "access-1.log"))

        def logged():
            with open(os.path.join(logdir, "error-1.log"), "rb") as f:
                return f.read().decode("utf-8", "replace")
        p.send_signal(signal.SIGUSR1)
        wait_for(lambda: "cannot reopen access log" in logged() and "cannot reopen error log" in logged(),
                 5 * cowdtest.SLOW, "the master's refusals to reopen: %r" % logged()[-600:])
        check("log %s is a symbolic link made by uid %d" % (err, nobody) in logged(),
              "message for the error log: %r" % logged()[-600:])
        check("log %s goes through %s, a symbolic link made by uid %d" % (
            access, os.path.join(logdir, "access-1.log"), nobody) in logged(),
            "message for the access log: %r" % logged()[-600:])
        eq(get_one(port, "/hello.txt").body, HELLO, "served after SIGUSR1")
        eq(sorted(os.listdir(victims)), [], "files root created through nobody's links")
        p.send_signal(signal.SIGTERM)
        eq(p.wait(15), 0, "master exit status")
    finally:
        kill_all(p)


# Giving a log to the workers' user changed its group as well, to that
# user's: logrotate's "create 0640 root adm" file lost its readers (adm).
@test("workers: a log given to --user keeps its group, at start and after a rotation",
      needs=["--access-log"])
def _(shared):
    need_root()
    readable_root(shared.root)
    nobody = pwd_uid("nobody")
    group = 4242                         # any group but nobody's
    logdir = tempfile.mkdtemp(prefix="cowd-group-", dir=shared.root.tmp)
    os.chmod(logdir, 0o755)
    access, err = os.path.join(logdir, "access.log"), os.path.join(logdir, "error.log")
    for path in (access, err):
        open(path, "wb").close()
        os.chown(path, 0, group)
        os.chmod(path, 0o640)
    srv = Server(shared.root, ["--workers", "1", "--user", "nobody", "--error-log", err, "--access-log", access])
    srv.err_log = err
    srv.start()
    try:
        for path in (access, err):
            st = os.stat(path)
            eq((st.st_uid, st.st_gid), (nobody, group), "owner and group of %s at start" % path)
        eq(srv.get("/hello.txt").body, HELLO, "served")    # the worker has started
        for path in (access, err):
            os.rename(path, path + ".1")
            open(path, "wb").close()            # logrotate's create
            os.chown(path, 0, group)
        srv.proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: os.stat(access).st_uid == nobody and os.stat(err).st_uid == nobody,
                 5 * cowdtest.SLOW, "the new logs given to nobody")
        for path in (access, err):
            eq(os.stat(path).st_gid, group, "group of %s after the rotation" % path)
        eq(stop(srv), 0, "master exit status")
        logged = "".join(log_lines(err + ".1"))
        check("cannot open it by this path" not in logged,
              "a warning about logs the workers can open: %r" % logged[-600:])
    finally:
        finish(srv)


# The workers reopen the logs by path as --user: in a directory that user
# could not search, every rotation left them writing to the old file, said
# only in that old file.  They say it at start.
@test("workers: logs the workers' user cannot reopen by path are named in a warning at start",
      needs=["--access-log"])
def _(shared):
    need_root()
    readable_root(shared.root)
    logdir = tempfile.mkdtemp(prefix="cowd-private-logs-", dir=shared.root.tmp)   # root's, 0700
    access, err = os.path.join(logdir, "access.log"), os.path.join(logdir, "error.log")
    srv = Server(shared.root, ["--workers", "1", "--user", "nobody", "--error-log", err, "--access-log", access])
    srv.err_log = err
    srv.start()
    try:
        eq(srv.get("/hello.txt").body, HELLO, "served")
        for kind, path in (("error", err), ("access", access)):
            wait_for(lambda: "%s log %s: nobody cannot open it by this path" % (kind, path) in error_log(srv),
                     5 * cowdtest.SLOW, "the warning for the %s log: %r" % (kind, error_log(srv)[-600:]))
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


# The root is opened before the workers drop to --user: one the user may not
# search was served as 403 to every request, with nothing in the log, and
# the start succeeded.
@test("workers: a document root --user cannot search stops the start with an error naming it")
def _(shared):
    need_root()
    readable_root(shared.root)
    private = tempfile.mkdtemp(prefix="cowd-private-root-", dir=shared.root.tmp)
    with open(os.path.join(private, "index.html"), "wb") as f:
        f.write(b"private\n")
    os.chmod(private, 0o700)
    p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:%d" % cowdtest.free_port(), "--root", private,
                          "--user", "nobody", "--workers", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = p.communicate(timeout=10 * cowdtest.SLOW)
    except subprocess.TimeoutExpired:
        kill_all(p)
        raise TestFailure("cowd started with a document root its workers cannot search")
    check(p.returncode != 0, "exit status 0")
    check(private.encode() in err and b"nobody" in err, "the error does not name the root and the user: %r" % err[-400:])


@test("workers: --user root keeps root")
def _(shared):
    need_root()
    srv = start(shared.root, ["--user", "root"])
    try:
        pids = workers_of(srv, 1)
        eq(uid_of(pids[0])[0], 0, "Uid of the worker")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


def kill_daemon(pid):
    """After a --daemon test: kill what is left of the daemon, workers first."""
    if pid is not None and os.path.exists("/proc/%d" % pid):
        for p in children(pid):
            os.kill(p, signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)


def run_daemon(d, args, cwd=None, **kw):
    """Runs `cowd --daemon` with its pid file and error log in d (named
    relative to cwd when that is d), which must return 0.  Returns the
    master's pid (None if the pid file is unreadable), the port, and the
    paths of the pid file and the error log."""
    pidf, err = os.path.join(d, "cowd.pid"), os.path.join(d, "error.log")
    names = ("cowd.pid", "error.log") if cwd == d else (pidf, err)
    port = cowdtest.free_port()
    rc = subprocess.call([cowdtest.COWD, "--daemon", "--pid-file", names[0], "--error-log", names[1],
                          "--listen", "127.0.0.1:%d" % port] + args, cwd=cwd, timeout=10, **kw)
    eq(rc, 0, "exit status of cowd --daemon")
    try:
        with open(pidf) as f:
            return int(f.read().strip()), port, pidf, err
    except (OSError, ValueError):
        return None, port, pidf, err


@test("workers: --daemon --pid-file: the pid file names a live master; SIGTERM removes it")
def _(shared):
    d = tempfile.mkdtemp(prefix="cowd-daemon-", dir=shared.root.tmp)
    pid, port, pidf, err = run_daemon(d, ["--root", shared.root.path, "--workers", "2"])
    try:
        check(pid is not None, "no pid in the pid file")
        check(os.path.exists("/proc/%d" % pid), "pid file names no live process")
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            check(b"cowd" in f.read(), "pid file names something else")
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(") ", 1)[1].split()
        eq(int(fields[3]), pid, "session id of the daemon (setsid)")
        eq(os.readlink("/proc/%d/cwd" % pid), "/", "cwd of the daemon")
        eq(os.readlink("/proc/%d/fd/0" % pid), "/dev/null", "stdin of the daemon")
        eq(get_one(port, "/hello.txt").body, HELLO, "served by the daemon")
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not os.path.exists(pidf), 10, "the pid file to be removed")
        wait_for(lambda: not os.path.exists("/proc/%d" % pid), 10, "the master to exit")
        with open(err) as f:
            check("master exiting" in f.read(), "error log of the daemon")
    finally:
        kill_daemon(pid)


@test("workers: --daemon without --error-log is refused")
def _(shared):
    p = subprocess.run([cowdtest.COWD, "--daemon"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=5)
    check(p.returncode != 0, "accepted")
    check(b"--error-log" in p.stderr, "message: %r" % p.stderr)


# --daemon and --foreground together: whichever came last won in silence (a
# wrapper's $OPTS adding --daemon to a unit's --foreground detached the
# server from a supervisor expecting it to stay).
@test("workers: --daemon with --foreground is refused, in either order")
def _(shared):
    for flags in (["--daemon", "--foreground"], ["--foreground", "--daemon"]):
        err = tempfile.mktemp(prefix="cowd-daemon-fg-", dir=shared.root.tmp)
        p = subprocess.run([cowdtest.COWD, "--listen", "127.0.0.1:%d" % cowdtest.free_port(),
                            "--root", shared.root.path, "--error-log", err] + flags,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
        eq(p.returncode, 1, "%s: exit status" % " ".join(flags))
        check(b"--daemon and --foreground" in p.stderr, "%s: message %r" % (" ".join(flags), p.stderr))


# --access-log /dev/stdout failed to start when standard output is a socket
# (systemd's journal): Linux will not open a socket through /proc/self/fd
# (ENXIO).  It is the stream itself now.
@test("workers: --access-log /dev/stdout and --error-log /dev/stderr work when they are sockets",
      needs=["--access-log"])
def _(shared):
    port = cowdtest.free_port()
    out_mine, out_theirs = socket.socketpair()
    err_mine, err_theirs = socket.socketpair()
    p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:%d" % port, "--root", shared.root.path,
                          "--workers", "1", "--access-log", "/dev/stdout", "--error-log", "/dev/stderr"],
                         stdout=out_theirs, stderr=err_theirs)
    out_theirs.close()
    err_theirs.close()
    try:
        eq(first_get(p, port).body, HELLO, "served")
        out_mine.settimeout(5 * cowdtest.SLOW)
        logged = b""
        while b"GET /hello.txt" not in logged:
            d = out_mine.recv(65536)
            if not d:
                break
            logged += d
        check(b'"GET /hello.txt HTTP/1.1" 200' in logged, "the access log on the socket: %r" % logged[-300:])
        p.send_signal(signal.SIGTERM)
        eq(p.wait(15), 0, "master exit status")
        err_mine.settimeout(5)
        said = cowdtest.read_to_eof(err_mine)     # every writer has exited
        check(b"master exiting" in said, "the error log on the socket: %r" % said[-300:])
    finally:
        kill_all(p)
        out_mine.close()
        err_mine.close()


@test("workers: with --error-log, start-up errors and warnings reach standard error too, info lines do not")
def _(shared):
    d = tempfile.mkdtemp(prefix="cowd-echo-", dir=shared.root.tmp)
    err = os.path.join(d, "error.log")
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    try:
        addr = "127.0.0.1:%d" % busy.getsockname()[1]
        # in the foreground: the bind fails; in a daemon: the pid file, after detaching
        for mode, args in (("foreground", ["--foreground", "--listen", addr]),
                           ("daemon", ["--daemon", "--listen", "127.0.0.1:%d" % cowdtest.free_port(),
                                       "--pid-file", os.path.join(d, "no", "such", "dir.pid")])):
            p = subprocess.run([cowdtest.COWD, "--root", shared.root.path, "--error-log", err] + args,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
            want = b"Address already in use" if mode == "foreground" else b"cannot open pid file"
            check(p.returncode != 0, "%s: started" % mode)
            check(want in p.stderr, "%s: standard error says %r" % (mode, p.stderr))
            check(b" info: " not in p.stderr, "%s: info lines echoed: %r" % (mode, p.stderr))
            with open(err, "rb") as f:
                check(want in f.read(), "%s: the error log lacks the error" % mode)
        # the log on standard error's own file: every line once
        with open(err, "wb"):
            pass
        with open(err, "ab") as log:
            p = subprocess.run([cowdtest.COWD, "--foreground", "--root", shared.root.path, "--error-log", err,
                                "--listen", addr], stdout=subprocess.PIPE, stderr=log, timeout=10)
        with open(err, "rb") as f:
            eq(f.read().count(b"Address already in use"), 1, "lines about the bind in a log that is stderr too")
    finally:
        busy.close()
    # a mime.types warning at start is echoed; once serving, standard error is
    # the daemon's /dev/null and the log's alone (the daemon returns at once:
    # had it kept a pipe to our standard error open, run() would wait for it)
    mt = os.path.join(d, "mime.types")
    with open(mt, "w") as f:
        f.write("text/plain txt\ntext/x-long abcdefghijklmnopq\n")
    pidf = os.path.join(d, "cowd.pid")
    p = subprocess.run([cowdtest.COWD, "--daemon", "--root", shared.root.path, "--error-log", err,
                        "--mime-types", mt, "--pid-file", pidf, "--listen", "127.0.0.1:%d" % cowdtest.free_port(),
                        "--workers", "3"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
    pid = read_pid(pidf)
    try:
        eq(p.returncode, 0, "exit status of cowd --daemon")
        # said once, by the master: the workers load the file again, quietly
        eq(p.stderr.count(b'extension "abcdefghijklmnopq" skipped'), 1, "warnings on standard error: %r"
           % p.stderr)
        check(b"serving" not in p.stderr, "info line echoed: %r" % p.stderr)
    finally:
        kill_daemon(pid)


# The pid file written over a log emptied it, and its removal at exit
# deleted the log.
@test("workers: a --pid-file that is the error or access log's file is refused at start, the log kept")
def _(shared):
    d = tempfile.mkdtemp(prefix="cowd-pidlog-", dir=shared.root.tmp)
    for log_flag in ("--error-log", "--access-log"):
        if log_flag == "--access-log" and not cowdtest.build_has(log_flag):
            continue                    # --enable-minimal: no access log
        path = os.path.join(d, "both" + log_flag)
        with open(path, "w") as f:
            f.write("an earlier line\n")
        port = cowdtest.free_port()
        p = subprocess.run([cowdtest.COWD, "--foreground", "--root", shared.root.path,
                            "--listen", "127.0.0.1:%d" % port, log_flag, path, "--pid-file", path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
        eq(p.returncode, 1, "exit status with %s and --pid-file the same file" % log_flag)
        check(b"each needs a file of its own" in p.stderr + open(path, "rb").read(),
              "%s: no message: %r" % (log_flag, p.stderr))
        with open(path, "rb") as f:
            check(f.read().startswith(b"an earlier line\n"), "%s: the log lost its lines" % log_flag)


def refused_pid_file(shared, pidf, what):
    """Starts cowd with --pid-file pidf, which it must refuse: exit status 1.
    Its standard error."""
    p = subprocess.Popen([cowdtest.COWD, "--foreground", "--root", shared.root.path,
                          "--listen", "127.0.0.1:%d" % cowdtest.free_port(), "--pid-file", pidf],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _, err = p.communicate(timeout=10 * cowdtest.SLOW)
    except subprocess.TimeoutExpired:
        kill_all(p)
        raise TestFailure("started with %s" % what)
    eq(p.returncode, 1, "exit status")
    return err


# O_NOFOLLOW stops symbolic links only: a hard link put where the pid file
# goes had the master (root) truncate the file it names.
@test("workers: a --pid-file with another name (a hard link) is refused, the file it names kept")
def _(shared):
    d = tempfile.mkdtemp(prefix="cowd-pidlink-", dir=shared.root.tmp)
    target = os.path.join(d, "precious")
    with open(target, "wb") as f:
        f.write(b"keep me\n")
    pidf = os.path.join(d, "cowd.pid")
    os.link(target, pidf)
    err = refused_pid_file(shared, pidf, "a hard-linked pid file")
    check(b"has other names (hard links)" in err, "message: %r" % err[-300:])
    with open(target, "rb") as f:
        eq(f.read(), b"keep me\n", "the file the link names")


# A pid file another user made (in a directory the workers' user may
# write, say) was taken as it was: its owner could hold its lock, so that
# no start succeeded, or write another pid into it for a logrotate hook to
# signal as root.
@test("workers: a --pid-file that belongs to another user is refused, the file kept")
def _(shared):
    if os.geteuid() != 0:
        raise TestSkip("gives a file away: needs root")
    d = tempfile.mkdtemp(prefix="cowd-pidowner-", dir=shared.root.tmp)
    pidf = os.path.join(d, "cowd.pid")
    with open(pidf, "wb") as f:
        f.write(b"1\n")
    os.chown(pidf, 65534, -1)
    err = refused_pid_file(shared, pidf, "a pid file of uid 65534")
    want = ("pid file %s belongs to uid 65534, not to uid 0 that cowd runs as" % pidf).encode()
    check(want in err, "message: %r" % err[-300:])
    with open(pidf, "rb") as f:
        eq(f.read(), b"1\n", "the file")


def read_pid(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def dead_pid():
    """The pid of a process that has ended (and been reaped)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def alive(pid):
    """pid runs (a zombie, killed but not yet reaped by init, does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(") ", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def stop_daemon(pid, pidf):
    """SIGTERM to a --daemon master; waits for it and its pid file to go."""
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not alive(pid), 10, "the master to exit")
    check(not os.path.exists(pidf), "the pid file is left behind")


@test("workers: --pid-file held by a running server: a second one refuses to start; a stale one is taken over")
def _(shared):
    # Before: the second started, truncated the first's pid file and wrote
    # its own pid there; whichever stopped first removed the file, naming the
    # other or not, and the running one had none.
    d = tempfile.mkdtemp(prefix="cowd-pidlock-", dir=shared.root.tmp)
    pid, port, pidf, err = run_daemon(d, ["--root", shared.root.path, "--workers", "2"])
    others = []
    try:
        check(pid is not None, "no pid in the pid file")
        want = "pid file %s is held by running process %d" % (pidf, pid)
        # in the foreground, the error on standard error
        p = subprocess.Popen([cowdtest.COWD, "--pid-file", pidf, "--root", shared.root.path,
                              "--listen", "127.0.0.1:%d" % cowdtest.free_port()],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        others.append(p.pid)
        try:
            _, out = p.communicate(timeout=10 * cowdtest.SLOW)
        except subprocess.TimeoutExpired:
            kill_all(p)
            raise TestFailure("a second server started on a pid file in use")
        check(p.returncode != 0, "exit status 0 of a second server on the same pid file")
        check(want in out.decode("utf-8", "replace"), "the error does not name the pid file and its "
              "holder (%r): %r" % (want, out[-400:]))
        # the same command line again, its address too: the pid file is
        # what it is told (it once said only that the address was in use)
        again = subprocess.run([cowdtest.COWD, "--pid-file", pidf, "--root", shared.root.path,
                                "--listen", "127.0.0.1:%d" % port],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=10 * cowdtest.SLOW)
        check(again.returncode != 0, "exit status 0 of the same server started again")
        check(want in again.stderr.decode("utf-8", "replace"), "the same server started again: the error "
              "does not name the pid file and its holder (%r): %r" % (want, again.stderr[-400:]))
        # with --daemon, in its error log
        err2 = os.path.join(d, "error2.log")
        rc = subprocess.call([cowdtest.COWD, "--daemon", "--pid-file", pidf, "--error-log", err2,
                              "--root", shared.root.path, "--listen", "127.0.0.1:%d" % cowdtest.free_port()],
                             timeout=10 * cowdtest.SLOW)
        if rc == 0 and read_pid(pidf) not in (None, pid):
            others.append(read_pid(pidf))
        check(rc != 0, "exit status 0 of cowd --daemon on a pid file in use")
        with open(err2) as f:
            log2 = f.read()
        check(want in log2, "the error log does not name the pid file and its holder (%r): %r"
              % (want, log2[-400:]))
        # the first is untouched
        check(alive(pid), "the first server is gone")
        eq(read_pid(pidf), pid, "pid in the pid file")
        eq(get_one(port, "/hello.txt").body, HELLO, "served by the first server")
        # no worker holds the (root-opened, writable) pid file open
        for w in children(pid):
            fds = "/proc/%d/fd" % w
            for fd in os.listdir(fds):
                try:
                    check(os.readlink(os.path.join(fds, fd)) != pidf,
                          "worker %d has the pid file open (descriptor %s)" % (w, fd))
                except FileNotFoundError:
                    pass
        stop_daemon(pid, pidf)
        # a stale pid file: its process gone, no lock
        gone = dead_pid()
        with open(pidf, "w") as f:
            f.write("%d\n" % gone)
        pid, port, pidf, err = run_daemon(d, ["--root", shared.root.path, "--workers", "1"])
        check(pid is not None and pid != gone, "the stale pid file was not rewritten: %r" % pid)
        check(alive(pid), "pid file names no live process")
        eq(get_one(port, "/hello.txt").body, HELLO, "served after taking over a stale pid file")
        stop_daemon(pid, pidf)
    finally:
        kill_daemon(pid)
        for o in others:
            kill_daemon(o)


@test("workers: --pid-file: a master killed with SIGKILL leaves a file the next one takes over")
def _(shared):
    # The lock is the master's alone (fcntl, not flock): workers outliving
    # a killed master must not keep the next one from starting.
    d = tempfile.mkdtemp(prefix="cowd-pidkill-", dir=shared.root.tmp)
    pid, port, pidf, err = run_daemon(d, ["--root", shared.root.path, "--workers", "2"])
    pid2 = None
    try:
        check(pid is not None, "no pid in the pid file")
        workers = children(pid)
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not alive(pid), 10, "the master to die")
        eq(read_pid(pidf), pid, "pid in the pid file left behind")
        pid2, port2, _, _ = run_daemon(d, ["--root", shared.root.path, "--workers", "1"])
        check(pid2 is not None and pid2 != pid, "the left-behind pid file was not rewritten: %r" % pid2)
        eq(get_one(port2, "/hello.txt").body, HELLO, "served by the new master")
        stop_daemon(pid2, pidf)
        for w in workers:
            wait_for(lambda: not alive(w), 10, "the old workers to stop")
    finally:
        kill_daemon(pid2)
        kill_daemon(pid)


@test("workers: --pid-file removed by hand and reused by another server: the first leaves it at exit")
def _(shared):
    # Before: the first to stop unlinked the path, whoever's file it was.
    d = tempfile.mkdtemp(prefix="cowd-pidreuse-", dir=shared.root.tmp)
    pid, port, pidf, err = run_daemon(d, ["--root", shared.root.path, "--workers", "1"])
    pid2 = None
    try:
        check(pid is not None, "no pid in the pid file")
        os.unlink(pidf)
        pid2, port2, _, _ = run_daemon(d, ["--root", shared.root.path, "--workers", "1"])
        check(pid2 is not None and pid2 != pid, "no pid in the new pid file: %r" % pid2)
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not alive(pid), 10, "the first master to exit")
        eq(read_pid(pidf), pid2, "pid in the pid file after the first server stopped")
        stop_daemon(pid2, pidf)
    finally:
        kill_daemon(pid2)
        kill_daemon(pid)


@test("workers: SIGHUP makes the new workers re-read --mime-types")
def _(shared):
    d = tempfile.mkdtemp(prefix="cowd-mime-", dir=shared.root.tmp)
    os.chmod(d, 0o755)
    mt = os.path.join(d, "mime.types")
    with open(mt, "w") as f:
        f.write("text/x-before txt\n")
    os.chmod(mt, 0o644)
    srv = start(shared.root, ["--workers", "2", "--mime-types", mt])
    try:
        old = workers_of(srv, 2)
        eq(srv.get("/hello.txt").get("Content-Type").split(";")[0], "text/x-before", "type before")
        with open(mt, "w") as f:
            f.write("text/x-after txt\n")
        srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: (lambda c: c if len(c) == 2 and not set(c) & set(old) else None)(
            children(srv.proc.pid)), 8, "the old workers to be replaced")
        for _ in range(6):
            eq(srv.get("/hello.txt").get("Content-Type").split(";")[0], "text/x-after", "type after")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


@test("workers: SIGHUP while the root is missing: the old workers keep serving")
def _(shared):
    # Before: the old workers were stopped at once, the new ones could not
    # start, and the master gave up: one reload took the whole server down.
    d = tempfile.mkdtemp(prefix="cowd-hup-", dir=shared.root.tmp)
    os.chmod(d, 0o755)
    www = www_in(d)
    srv = start(shared.root, ["--workers", "2", "--log-level", "debug"], root_dir=www)
    try:
        old = sorted(workers_of(srv, 2))
        # both serving (under valgrind they take a while), so that only the
        # new workers meet the missing root
        wait_for(lambda: error_log(srv).count("worker ready") >= 2, 10 * cowdtest.SLOW, "2 ready workers")
        os.rename(www, www + ".away")
        srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: error_log(srv).count("keeps serving") >= 2, 10 * cowdtest.SLOW,
                 "the reload to be abandoned")
        time.sleep(0.3)
        check(srv.proc.poll() is None, "the master exited: %s" % error_log(srv)[-800:])
        eq(sorted(workers_of(srv, 2)), old, "workers after the failed reload")
        for _ in range(4):
            # they answer; where openat2 is missing (the BSDs; valgrind)
            # the realpath check cannot confirm a moved root and says 403
            r = get_one(srv.port, "/hello.txt")
            check(r.status in (200, 403), "answer with the root moved away: %s" % r.status_line)
        # with the root back, the same workers serve it, and the next reload
        # replaces them
        os.rename(www + ".away", www)
        for _ in range(4):
            eq(get_one(srv.port, "/hello.txt").body, HELLO, "served by the old workers")
        eq(sorted(workers_of(srv, 2)), old, "workers before the second reload")
        srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: (lambda c: c if len(c) == 2 and not set(c) & set(old) else None)(
            children(srv.proc.pid)), 10 * cowdtest.SLOW, "the old workers to be replaced")
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "served after the second reload")
        eq(stop(srv), 0, "master exit status")
    finally:
        if os.path.isdir(www + ".away"):
            os.rename(www + ".away", www)
        finish(srv)


@test("workers: SIGHUP under a descriptor limit too low for a new worker: the old one serves on, no retries")
def _(shared):
    # A new worker short of descriptors exits with 78 from cowd's own check,
    # or, where libevent (or LeakSanitizer) gives up first, with a status of
    # its own.  Before, only 78 handed the slot back to the old worker; any
    # other status had the master restart the new one with back-off for as
    # long as the limit stayed low.  Under the higher limits the new worker
    # may start and replace the old one, and under the lowest the master
    # itself may fail to re-read the configuration and keep the running
    # workers: both are fine too.
    if not hasattr(resource, "prlimit"):
        raise TestSkip("no prlimit here")
    srv = start(shared.root, ["--workers", "1", "--log-level", "debug"])
    try:
        current = workers_of(srv, 1)
        wait_for(lambda: "worker ready" in error_log(srv), 10 * cowdtest.SLOW, "the worker to be ready")
        soft, hard = resource.prlimit(srv.proc.pid, resource.RLIMIT_NOFILE)
        abandoned = 0
        for limit in range(8, 26, 2):
            log = error_log(srv)
            kept, ready = log.count("keeps serving"), log.count("worker ready")
            refused = log.count("keeping the running workers")
            resource.prlimit(srv.proc.pid, resource.RLIMIT_NOFILE, (limit, hard))
            srv.proc.send_signal(signal.SIGHUP)

            def settled():
                log = error_log(srv)
                if log.count("keeps serving") > kept:
                    return "abandoned"
                if log.count("keeping the running workers") > refused:
                    return "refused"
                c = children(srv.proc.pid)
                if log.count("worker ready") > ready and len(c) == 1 and c != current:
                    return "replaced"
                return None
            how = wait_for(settled, 10 * cowdtest.SLOW,
                           "the reload under a limit of %d to end; log: %s" % (limit, error_log(srv)[-600:]))
            check("restarting it" not in error_log(srv),
                  "a new worker was restarted under a limit of %d: %s" % (limit, error_log(srv)[-600:]))
            check(srv.proc.poll() is None, "the master exited: %s" % error_log(srv)[-800:])
            if how != "replaced":
                abandoned += how == "abandoned"
                eq(workers_of(srv, 1), current, "workers after the reload under a limit of %d" % limit)
            else:
                current = workers_of(srv, 1)
            eq(get_one(srv.port, "/hello.txt").body, HELLO, "served under a limit of %d" % limit)
        check(abandoned > 0, "no new worker was abandoned under any limit from 8 to 24")
        # with the limit back, the next reload replaces the worker
        resource.prlimit(srv.proc.pid, resource.RLIMIT_NOFILE, (soft, hard))
        srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: (lambda c: c if len(c) == 1 and c != current else None)(
            children(srv.proc.pid)), 10 * cowdtest.SLOW, "the worker to be replaced")
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "served after the reload")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


def jail(shared):
    """A directory for --chroot (skips the test unless run as root)."""
    if os.geteuid() != 0:
        raise TestSkip("--chroot needs root")
    d = tempfile.mkdtemp(prefix="cowd-jail-", dir=shared.root.tmp)
    os.chmod(d, 0o755)
    return d


def www_in(d):
    """d/www holding hello.txt, readable by all; its path."""
    www = os.path.join(d, "www")
    os.mkdir(www)
    os.chmod(www, 0o755)
    with open(os.path.join(www, "hello.txt"), "wb") as f:
        f.write(HELLO)
    os.chmod(os.path.join(www, "hello.txt"), 0o644)
    return www


def chroot_env():
    """In a sanitizer build, LeakSanitizer reads /proc at exit; inside a
    chroot there is none, and it would replace a worker's exit status."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    return env


@test("workers: eight workers that cannot start at once: the master exits 1 promptly, none left")
def _(shared):
    # Before: reap() gave up at the first failed worker and never reaped the
    # others; with their SIGCHLD already taken, the master could wait for
    # those zombies for ever.
    for attempt in range(3):
        jailed = jail(shared)
        p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:%d" % cowdtest.free_port(),
                              "--chroot", jailed, "--root", "/nonexistent", "--workers", "8",
                              "--shutdown-timeout", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=chroot_env())
        try:
            _, err = p.communicate(timeout=10 * cowdtest.SLOW)
        except subprocess.TimeoutExpired:
            kids = children(p.pid)
            finish_pids = kids + [p.pid]
            for pid in finish_pids:
                os.kill(pid, signal.SIGKILL)
            p.wait()
            raise TestFailure("master still running 10 s after its workers failed (attempt %d)" % attempt)
        eq(p.returncode, 1, "exit status")
        check(b"giving up" in err, "message: %r" % err[-300:])
        # the root is looked up inside the chroot, not on the host
        check(("document root /nonexistent (inside --chroot %s)" % jailed).encode() in err,
              "the error says where the root was looked for: %r" % err[-400:])


@test("workers: --daemon reports success only once the workers serve")
def _(shared):
    # a MIME table big enough that a worker takes a while to load it, then
    # fails (no root inside the chroot): before, --daemon said success 0.3 s
    # after forking the workers, whatever became of them
    d = jail(shared)
    mt = os.path.join(d, "mime.types")
    with open(mt, "w") as f:
        for i in range(400000):
            f.write("application/x-t%d ext%d e%da e%db\n" % (i, i, i, i))
    os.chmod(mt, 0o644)
    err = os.path.join(d, "error.log")
    t0 = time.time()
    rc = subprocess.call([cowdtest.COWD, "--daemon", "--error-log", err, "--mime-types", mt,
                          "--listen", "127.0.0.1:%d" % cowdtest.free_port(), "--chroot", d,
                          "--root", "/nonexistent"], timeout=30 * cowdtest.SLOW, env=chroot_env())
    eq(rc, 1, "exit status of cowd --daemon whose worker cannot start (after %.1f s)" % (time.time() - t0))


def close_standard_fds():
    for fd in (0, 1, 2):
        os.close(fd)


@test("workers: --daemon started with descriptors 0-2 closed still logs and serves")
def _(shared):
    # Before: the error log or the listen socket took descriptor 0-2, and
    # --daemon's redirection to /dev/null replaced it.
    d = tempfile.mkdtemp(prefix="cowd-daemon-", dir=shared.root.tmp)
    pid, port, _, err = run_daemon(d, ["--root", shared.root.path], preexec_fn=close_standard_fds)
    try:
        check(pid is not None, "no pid in the pid file")
        eq(get_one(port, "/hello.txt").body, HELLO, "served by the daemon")
        os.kill(pid, signal.SIGUSR2)
        wait_for(lambda: "SIGUSR2: ignored" in open(err).read(), 5, "the error log to be written")
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not os.path.exists("/proc/%d" % pid), 10, "the master to exit")
    finally:
        kill_daemon(pid)


@test("workers: --daemon with a relative --chroot")
def _(shared):
    # Before: --daemon's chdir("/") came first, and the workers could not find "jail"
    d = jail(shared)
    www_in(d)
    pid, port, _, _ = run_daemon(d, ["--chroot", ".", "--root", "/www"], cwd=d, env=chroot_env())
    try:
        check(pid is not None, "no pid in the pid file")
        eq(get_one(port, "/hello.txt").body, HELLO, "served from the chroot")
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: not os.path.exists("/proc/%d" % pid), 10, "the master to exit")
    finally:
        kill_daemon(pid)


@test("workers: SIGUSR2 (nginx's binary upgrade) is ignored with a warning, by master and worker")
def _(shared):
    # its default action once killed the master, and the workers with it
    srv = start(shared.root, ["--workers", "1"])
    try:
        w = workers_of(srv, 1)
        srv.proc.send_signal(signal.SIGUSR2)
        os.kill(w[0], signal.SIGUSR2)
        wait_for(lambda: error_log(srv).count("SIGUSR2: ignored") >= 2, 5, "both warnings")
        check(srv.proc.poll() is None, "the master died")
        eq(workers_of(srv, 1), w, "the same worker")
        eq(srv.get("/hello.txt").status, 200, "still serving")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


# An ignored SIGCHLD survives exec: the kernel reaped the workers itself, the
# master's waitpid never saw one die, so none was replaced, and a stop
# waited for them for ever.
@test("workers: started with SIGCHLD ignored by the caller, a killed worker is replaced and SIGTERM stops")
def _(shared):
    srv = start(shared.root, ["--workers", "1"],
                preexec=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    try:
        w = workers_of(srv, 1)[0]
        os.kill(w, signal.SIGKILL)
        wait_for(lambda: (lambda c: c if len(c) == 1 and c[0] != w else None)(children(srv.proc.pid)),
                 5 * cowdtest.SLOW, "a replacement worker (log: %s)" % error_log(srv)[-400:])
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "served by the new worker")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish(srv)


def wchan(pid):
    try:
        with open("/proc/%d/wchan" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


# Until the master blocked its signals (after the logs, the MIME types, the
# users and the listen sockets were done) SIGHUP and SIGUSR1 had their
# default action and ended it; systemd counts an end by SIGHUP as a clean
# stop, so `systemctl start cowd; systemctl reload cowd` could leave it
# down.  Here the master is held in the open of its error log, a FIFO.
@test("workers: SIGHUP and SIGUSR1 sent while the master is starting wait for it and do not end it")
def _(shared):
    d = tempfile.mkdtemp(prefix="cowd-early-", dir=shared.root.tmp)
    fifo = os.path.join(d, "error.fifo")
    os.mkfifo(fifo)
    port = cowdtest.free_port()
    p = subprocess.Popen(cowdtest.WRAPPER + [cowdtest.COWD, "--listen", "127.0.0.1:%d" % port,
                                             "--root", shared.root.path, "--workers", "1",
                                             "--error-log", fifo],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = []
    reader = fifo_reader(fifo, got)
    try:
        try:
            wait_for(lambda: p.poll() is not None or wchan(p.pid) == "wait_for_partner",
                     10 * cowdtest.SLOW, "the master to wait in the open of its error log")
        except TestFailure:
            raise TestSkip("/proc/PID/wchan does not name the wait (%r)" % wchan(p.pid))
        check(p.poll() is None, "the master ended before it was signalled: %s" % p.returncode)
        p.send_signal(signal.SIGHUP)
        p.send_signal(signal.SIGUSR1)
        time.sleep(0.2)
        check(p.poll() is None, "the master was ended by a signal sent while it started: status %s"
              % p.returncode)
        reader.start()
        eq(first_get(p, port).body, HELLO, "served")
        log = lambda: b"".join(got).decode("utf-8", "replace")
        wait_for(lambda: "SIGHUP: starting new workers" in log(), 10 * cowdtest.SLOW,
                 "the held SIGHUP to restart the workers (log: %s)" % log()[-600:])
        check("SIGUSR1: reopening log files" in log(), "the held SIGUSR1 was lost: %s" % log()[-600:])
        eq(get_one(port, "/hello.txt").body, HELLO, "served after the restart")
        p.send_signal(signal.SIGTERM)
        eq(p.wait(15 * cowdtest.SLOW), 0, "master exit status")
    finally:
        kill_all(p)                     # the reader then reads the end of the FIFO


# /proc/self/fd was opened before the chroot and kept for the worker's
# life: a directory from outside the jail, and openat(fd, "../../..") leads
# out of it.  It is opened inside now, and only if it is procfs there.
@test("workers: with --chroot no directory from outside the jail stays open in a worker")
def _(shared):
    d = jail(shared)
    www_in(d)
    # a plain directory where procfs would be: never taken for it (it would
    # serve these files in place of the ones asked for)
    fake = os.path.join(d, "proc", "self", "fd")
    os.makedirs(fake)
    for n in range(64):
        with open(os.path.join(fake, str(n)), "wb") as f:
            f.write(b"not the file asked for\n")
    port = cowdtest.free_port()
    p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:%d" % port, "--chroot", d,
                          "--root", "/www", "--workers", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=chroot_env())
    try:
        eq(first_get(p, port).body, HELLO, "served from the jail")
        w = wait_for(lambda: (lambda c: c if len(c) == 1 else None)(children(p.pid)), 5, "the worker")[0]
        real = os.path.realpath(d)
        outside = []
        for fd in os.listdir("/proc/%d/fd" % w):
            link = "/proc/%d/fd/%s" % (w, fd)
            try:
                if not stat.S_ISDIR(os.stat(link).st_mode):
                    continue
                target = os.readlink(link)
            except OSError:
                continue
            if target != real and not target.startswith(real + "/"):
                outside.append((fd, target))
        eq(outside, [], "directories from outside the jail open in the worker")
        eq(get_one(port, "/hello.txt").body, HELLO, "served again")
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=15)
        check(b"/proc/self/fd inside --chroot" in err and b"not procfs" in err,
              "no warning about the jail's /proc: %r" % err[-600:])
    finally:
        kill_all(p)


# A worker not serving 10 s after its start was taken for ready.  After a
# SIGHUP its old worker was stopped then, so when the new one failed after
# all none was left to take the slot back; at a first start its failure was
# taken for a crash and restarted for ever instead of ending the server.
# The fault shim holds a worker's setgroups() 11 s, then fails it (exit 78).
def slow_failing_start(shared, seconds=11):
    need_root()
    readable_root(shared.root)
    marker = tempfile.mktemp(prefix="cowd-slow-start-", dir=shared.root.tmp)
    return marker, cowdtest.preloaded_faults(shared.root.tmp, FAULT_SETGROUPS_FILE=marker,
                                             FAULT_SETGROUPS_SLEEP=str(seconds))


def finish_slow_start(srv, marker):
    finish(srv)
    if os.path.exists(marker):
        os.unlink(marker)


@test("workers: after SIGHUP, a new worker that takes 11 s to fail leaves the old one serving")
def _(shared):
    marker, faults = slow_failing_start(shared)
    with faults:
        srv = start(shared.root, ["--workers", "1"])
    try:
        old = workers_of(srv, 1)[0]
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "served before")
        open(marker, "w").close()
        srv.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: [c for c in children(srv.proc.pid) if c != old], 5, "the new worker")
        time.sleep(10.5)
        check(alive(old), "the old worker was stopped before its replacement served: %s"
              % error_log(srv)[-600:])
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "served 10.5 s after the SIGHUP")
        wait_for(lambda: "old worker %d keeps serving" % old in error_log(srv), 10,
                 "the new worker's failure to give the slot back (log: %s)" % error_log(srv)[-600:])
        os.unlink(marker)
        eq(workers_of(srv, 1), [old], "the workers")
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "served after the failed reload")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish_slow_start(srv, marker)


# Two SIGHUPs, the second while the first one's worker was still starting,
# then the second one's worker failing: the slot went back to the first old
# worker found in the master's table, the oldest, which then stopped the
# newer one once it served, undoing the first reload.  The newest takes it.
@test("workers: a second SIGHUP's worker that fails hands the slot to the first SIGHUP's, not the oldest")
def _(shared):
    marker, faults = slow_failing_start(shared, 5)
    with faults:
        srv = start(shared.root, ["--workers", "1"])
    try:
        first = workers_of(srv, 1)[0]
        open(marker, "w").close()
        t1 = time.time()
        srv.proc.send_signal(signal.SIGHUP)          # its worker sleeps 5 s in setgroups
        second = wait_for(lambda: [c for c in children(srv.proc.pid) if c != first], 2, "the second worker")[0]
        time.sleep(max(0.0, t1 + 2.5 - time.time()))
        srv.proc.send_signal(signal.SIGHUP)          # while the second still starts: its worker sleeps too
        third = wait_for(lambda: [c for c in children(srv.proc.pid) if c not in (first, second)], 2,
                         "the third worker")[0]
        time.sleep(max(0.0, t1 + 3.5 - time.time()))
        os.unlink(marker)                            # the second's setgroups, done at t1 + 5, goes on
        time.sleep(max(0.0, t1 + 6.25 - time.time()))
        open(marker, "w").close()                    # the third's, done at t1 + 7.5, fails
        wait_for(lambda: "new worker %d (slot 0)" % third in error_log(srv), 10,
                 "the third worker's failure (log: %s)" % error_log(srv)[-600:])
        log = error_log(srv)
        check("old worker %d keeps serving" % second in log,
              "the slot went to the second worker %d, not the first %d: %s" % (second, first, log[-800:]))
        wait_for(lambda: children(srv.proc.pid) == [second], 10 * cowdtest.SLOW,
                 "the first worker stopped, the second serving (workers %s)" % children(srv.proc.pid))
        eq(get_one(srv.port, "/hello.txt").body, HELLO, "served by the second worker")
        eq(stop(srv), 0, "master exit status")
    finally:
        finish_slow_start(srv, marker)


def start_failing_first(shared, args, stderr):
    """A master whose first worker takes 11 s to fail: (marker, process)."""
    marker, faults = slow_failing_start(shared)
    open(marker, "w").close()
    with faults:
        p = subprocess.Popen([cowdtest.COWD, "--listen", "127.0.0.1:%d" % cowdtest.free_port(),
                              "--root", shared.root.path, "--workers", "1"] + args,
                             stdout=subprocess.DEVNULL, stderr=stderr)
    return marker, p


# A stop during the start-up left the start-up's end (10 s after the start)
# among the master's wake-up times although it no longer waits for it: once
# past, the master woke every millisecond until its workers were gone.
@test("workers: a master stopped during a slow start sleeps until its workers are gone")
def _(shared):
    marker, p = start_failing_first(shared, ["--shutdown-timeout", "30"], subprocess.DEVNULL)
    t0 = time.time()
    try:
        time.sleep(1.0)
        p.send_signal(signal.SIGTERM)       # the worker still in its 11 s setgroups()
        time.sleep(max(0.0, t0 + 10.2 - time.time()))   # past the start-up's end
        if p.poll() is not None:
            raise TestFailure("the master exited before its worker (status %s)" % p.returncode)
        before = cowdtest.voluntary_switches(p.pid)
        time.sleep(0.5)
        if p.poll() is None:
            woke = cowdtest.voluntary_switches(p.pid) - before
            check(woke < 20, "the master woke %d times in 0.5 s waiting for its worker" % woke)
        p.wait(15)
    finally:
        kill_all(p)
        os.unlink(marker)


@test("workers: a first worker that takes 11 s to fail ends the server with status 1")
def _(shared):
    marker, p = start_failing_first(shared, [], subprocess.PIPE)
    try:
        _, err = p.communicate(timeout=25)
    except subprocess.TimeoutExpired:
        kill_all(p)
        raise TestFailure("the master still runs 25 s after its only worker could not start")
    finally:
        os.unlink(marker)
    eq(p.returncode, 1, "exit status")
    check(b"cannot start" in err, "message: %r" % err[-400:])
