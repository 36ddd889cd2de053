"""cowdtest.py: harness for cowd's integration tests (python3 stdlib only).

It starts the real server binary ($COWD) on a free loopback port with a
temporary document root of known content, talks raw HTTP/1.1 to it over
sockets, and parses responses exactly (status line, headers in order with
duplicates, body by Content-Length or until close).

A test is a function registered with @test(name, args=[...]); it receives the
Server started with those extra command-line arguments.  Servers are shared
between tests with the same arguments; after each test the harness checks
that the server is still running and has not printed a sanitizer report, and
fails the test (and restarts the server) otherwise.
"""

import calendar
import errno
import os
import random
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import traceback

COWD = os.environ.get("COWD", "")
SRCDIR = os.environ.get("COWD_SRCDIR", "")
# COWD_WRAPPER: a command line prefixed to the server's (e.g. valgrind ...),
# which then gets 4x the time to start and to answer
WRAPPER = os.environ.get("COWD_WRAPPER", "").split()
SLOW = 4 if WRAPPER else 1

TIMEOUT = 5.0 * SLOW    # default socket timeout of every test connection


class TestFailure(Exception):
    pass


class TestSkip(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def eq(got, want, what):
    if got != want:
        g, w = repr(got), repr(want)
        if len(g) > 300:
            g = g[:300] + "..."
        if len(w) > 300:
            w = w[:300] + "..."
        raise TestFailure("%s: got %s, want %s" % (what, g, w))


# ---------------------------------------------------------------------------
# the document root
# ---------------------------------------------------------------------------

def pattern(n, seed):
    """n deterministic bytes that differ per seed (so responses can be told apart)."""
    r = random.Random(seed)
    return bytes(r.getrandbits(8) for _ in range(n))


HELLO = b"Hello, world!\n"
DIGITS = b"0123456789" * 10                         # 100 bytes, easy to slice
DATA = pattern(1000, 1)                             # data.bin, 1000 bytes
BIG_SIZE = 20 * 1024 * 1024
INDEX = b"<!DOCTYPE html>\n<title>root index</title>\n"
DIR_INDEX = b"<p>dir index</p>\n"
DIR_OTHER = b"<p>dir other index</p>\n"
ROOT_OTHER = b"<p>root other index</p>\n"
SECRET = b"outside the root\n"
WEIRD_NAME = "a file & <x>.txt"
WEIRD = b"weird name\n"
NUMBERED = [pattern(100 + i, 1000 + i) for i in range(10)]    # n0.txt ... n9.txt


def settle_file(path, changed=None):
    """Waits until the file at path (or anything changed at time changed)
    changed long enough ago that cowd sends its validators: one changed
    within the last 2-3 s may be mid-write and gets neither ETag nor
    Last-Modified (static_file.c)."""
    if path is not None:
        changed = os.stat(path).st_ctime
    ready = int(changed) + 3.1
    while time.time() < ready:
        time.sleep(ready - time.time())


class Root:
    """A temporary tree: <tmp>/root is the document root, <tmp>/outside is not."""

    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix="cowd-it-")
        # started as root, cowd may drop privileges: everything must stay
        # reachable for an unprivileged user (mkdtemp makes the dir 0700)
        os.chmod(self.tmp, 0o755)
        self.path = os.path.join(self.tmp, "root")
        self.outside = os.path.join(self.tmp, "outside")
        os.mkdir(self.path)
        os.mkdir(self.outside)
        self.files = {}
        w = self.write
        w("index.html", INDEX)
        w("other.html", ROOT_OTHER)
        w("hello.txt", HELLO)
        w("digits.txt", DIGITS)
        w("data.bin", DATA)
        w("empty.txt", b"")
        w("style.css", b"body { color: black }\n")
        w("A.txt", b"capital A\n")
        w(WEIRD_NAME, WEIRD)
        for i, body in enumerate(NUMBERED):
            w("n%d.txt" % i, body)
        w("dir/index.html", DIR_INDEX)
        w("dir/other.html", DIR_OTHER)
        w("docs/readme.txt", b"docs readme\n")
        w("noindex/b.txt", b"b\n")
        w("noindex/Zeta.txt", b"zeta\n")
        w("noindex/" + WEIRD_NAME, WEIRD)
        w("noindex/.hidden", b"hidden\n")
        w("noindex/sub/x.txt", b"x\n")
        w("sec/secret.txt", b"unreadable\n")
        os.chmod(os.path.join(self.path, "sec/secret.txt"), 0)
        with open(os.path.join(self.outside, "secret.txt"), "wb") as f:
            f.write(SECRET)
        # symbolic links: out of the root, inside (relative and absolute)
        os.symlink(os.path.join(self.outside, "secret.txt"), os.path.join(self.path, "link-out.txt"))
        os.symlink(self.outside, os.path.join(self.path, "link-out-dir"))
        os.symlink("hello.txt", os.path.join(self.path, "link-in.txt"))
        os.symlink(os.path.join(os.path.realpath(self.path), "digits.txt"),
                   os.path.join(self.path, "link-in-abs.txt"))
        os.mkfifo(os.path.join(self.path, "fifo"))
        # the big file: sparse-free known content, repeated 1 MiB block
        block = pattern(1024 * 1024, 7)
        self.big_block = block
        with open(os.path.join(self.path, "big.bin"), "wb") as f:
            for _ in range(BIG_SIZE // len(block)):
                f.write(block)
        self.made = time.time()

    def settle(self, rel=None):
        """settle_file() for rel under the root (default: every file the
        tree began with)."""
        settle_file(os.path.join(self.path, rel) if rel else None, self.made)

    def write(self, rel, data):
        p = os.path.join(self.path, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        self.files[rel] = data

    def stat(self, rel):
        return os.stat(os.path.join(self.path, rel))

    def cleanup(self):
        try:
            os.chmod(os.path.join(self.path, "sec/secret.txt"), 0o644)
        except OSError:
            pass
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---------------------------------------------------------------------------
# responses
# ---------------------------------------------------------------------------

IMF_FIXDATE = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} "
                         r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} "
                         r"[0-9]{2}:[0-9]{2}:[0-9]{2} GMT$")


class Response:
    def __init__(self, version, status, reason, headers, raw_head):
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers          # [(name, value)] in order
        self.raw_head = raw_head
        self.body = b""

    @property
    def status_line(self):
        return "%s %d %s" % (self.version, self.status, self.reason)

    def all(self, name):
        n = name.lower()
        return [v for k, v in self.headers if k.lower() == n]

    def get(self, name):
        """The value of a header that must appear at most once (None if absent)."""
        v = self.all(name)
        if len(v) > 1:
            raise TestFailure("header %s repeated: %r" % (name, v))
        return v[0] if v else None

    def has(self, name):
        return bool(self.all(name))

    def __repr__(self):
        return "<%s %r body=%d>" % (self.status_line, self.headers, len(self.body))


class Closed(Exception):
    pass


class Conn:
    """One client connection with its own receive buffer."""

    def __init__(self, port, timeout=TIMEOUT):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        self.eof = False
        self.received = 0           # bytes received so far, consumed or not

    def send(self, data):
        if isinstance(data, str):
            data = data.encode("latin-1")
        self.sock.sendall(data)

    def _fill(self):
        if self.eof:
            raise Closed("connection closed by server")
        try:
            d = self.sock.recv(262144)
        except ConnectionResetError:
            d = b""
        except socket.timeout:
            raise TestFailure("timed out waiting for the server (buffered: %r)" % self.buf[:200])
        if not d:
            self.eof = True
            raise Closed("connection closed by server")
        self.received += len(d)
        self.buf += d

    def read_line_block(self):
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > 1 << 20:
                raise TestFailure("response head too long")
            try:
                self._fill()
            except Closed:
                raise TestFailure("server closed the connection before a full response head "
                                  "(got %r)" % self.buf[:300])
        i = self.buf.index(b"\r\n\r\n")
        head, self.buf = self.buf[:i], self.buf[i + 4:]
        return head

    def read_exact(self, n):
        while len(self.buf) < n:
            try:
                self._fill()
            except Closed:
                raise TestFailure("server closed after %d of %d body bytes" % (len(self.buf), n))
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def read_to_eof(self):
        while True:
            try:
                self._fill()
            except Closed:
                break
        d, self.buf = self.buf, b""
        return d

    def response(self, method="GET", common=True, interim=False):
        """Reads one response.  Interim (1xx) responses are returned only if
        interim is true; otherwise it is an error to receive one."""
        head = self.read_line_block()
        try:
            text = head.decode("latin-1")
        except UnicodeDecodeError:
            raise TestFailure("undecodable head %r" % head)
        lines = text.split("\r\n")
        m = re.match(r"^(HTTP/[0-9]\.[0-9]) ([0-9]{3}) (.*)$", lines[0])
        if not m:
            raise TestFailure("bad status line %r" % lines[0])
        headers = []
        for ln in lines[1:]:
            if ":" not in ln or ln[0] in " \t" or "\r" in ln or "\n" in ln:
                raise TestFailure("bad header line %r in %r" % (ln, text))
            k, v = ln.split(":", 1)
            if k != k.strip() or not k:
                raise TestFailure("bad header name %r" % k)
            headers.append((k, v.strip(" \t")))
        r = Response(m.group(1), int(m.group(2)), m.group(3), headers, head)
        if r.status < 200:
            if not interim:
                raise TestFailure("unexpected interim response %s" % r.status_line)
            return r
        cl = r.all("Content-Length")
        if len(cl) > 1:
            raise TestFailure("several Content-Length: %r" % cl)
        if r.has("Transfer-Encoding"):
            raise TestFailure("unexpected Transfer-Encoding in %r" % r)
        if method == "HEAD" or r.status in (204, 304):
            r.body = b""
        elif cl:
            if not re.match(r"^[0-9]+$", cl[0]):
                raise TestFailure("bad Content-Length %r" % cl[0])
            r.body = self.read_exact(int(cl[0]))
        else:
            r.body = self.read_to_eof()
        if common:
            check_common(r)
        return r

    def expect_closed(self, timeout=3.0):
        """The server must close the connection (EOF or reset) with nothing more sent."""
        self.sock.settimeout(timeout)
        extra = b""
        try:
            while True:
                d = self.sock.recv(65536)
                if not d:
                    break
                extra += d
        except ConnectionResetError:
            pass
        except socket.timeout:
            raise TestFailure("server did not close the connection (buffered %r)" % self.buf[:100])
        finally:
            self.sock.settimeout(TIMEOUT)
        extra = self.buf + extra
        self.buf = b""
        if extra:
            raise TestFailure("unexpected bytes before close: %r" % extra[:200])
        self.eof = True

    def expect_open(self, wait=0.3):
        """Nothing arrives and the connection stays open for `wait` seconds."""
        r, _, _ = select.select([self.sock], [], [], wait)
        if r:
            try:
                d = self.sock.recv(65536, socket.MSG_PEEK)
            except ConnectionResetError:
                d = b""
            if not d:
                raise TestFailure("server closed a connection that should stay open")
            raise TestFailure("unexpected bytes: %r" % d[:200])

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


def imf_fixdate_seconds(text):
    """Seconds since the epoch of an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT")."""
    return calendar.timegm(time.strptime(text, "%a, %d %b %Y %H:%M:%S GMT"))


def check_common(r):
    """Properties of every final response: Date (IMF-fixdate), Server, and
    error pages with a small text/html body of the announced length."""
    d = r.all("Date")
    check(len(d) == 1, "%s: want one Date header, got %r" % (r.status_line, d))
    check(IMF_FIXDATE.match(d[0]) is not None, "Date not IMF-fixdate: %r" % d[0])
    # the server's clock to the second, read when the reply was made: not
    # ahead of ours, and behind by no more than the reply took to come
    age = time.time() - imf_fixdate_seconds(d[0])
    check(-2 <= age <= 10 * SLOW, "Date %r is %.1f s from this clock" % (d[0], -age))
    s = r.all("Server")
    check(len(s) == 1 and s[0], "%s: want one Server header, got %r" % (r.status_line, s))
    eq(r.version, "HTTP/1.1", "response version")
    if r.status >= 400:
        ct = r.get("Content-Type") or ""
        check(ct.startswith("text/html"), "error %s has Content-Type %r" % (r.status, ct))
        cl = r.get("Content-Length")
        check(cl is not None, "error %s without Content-Length" % r.status)
        if r.body or int(cl) != 0:
            # HEAD reads no body; otherwise the body is what was announced
            if r.body:
                eq(len(r.body), int(cl), "error page Content-Length vs body")
                check(len(r.body) < 1024, "error page too big")
                check(str(r.status).encode() in r.body, "error page does not name the status")


def request(method, target, headers=None, version="HTTP/1.1", host="localhost", body=b""):
    """Builds a request; headers is a list of (name, value) or raw lines."""
    lines = ["%s %s %s" % (method, target, version)]
    if host is not None:
        lines.append("Host: " + host)
    for h in headers or []:
        lines.append(h if isinstance(h, str) else "%s: %s" % h)
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return data + body


# ---------------------------------------------------------------------------
# the server
# ---------------------------------------------------------------------------

def read_to_eof(sock, chunk=65536):
    """Everything the peer sends on sock until it closes its side."""
    data = b""
    while True:
        d = sock.recv(chunk)
        if not d:
            return data
        data += d


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                   "ERROR: ThreadSanitizer", "WARNING: MemorySanitizer")


# the master process (if any) logs a worker that crashed and was restarted
WORKER_DIED = re.compile(r"worker \d+ \(slot \d+\) [^\n]*(restarting it|giving up)[^\n]*")


def worker_to_measure(srv):
    """The pid of the server's worker (or the server), whose memory a test
    reads in /proc/PID/status; skips the test where that would measure
    something else: a wrapper's memory, AddressSanitizer's quarantine."""
    if WRAPPER:
        raise TestSkip("the server's memory is the wrapper's (%s) to account" % WRAPPER[0])
    with open(COWD, "rb") as f:
        if b"__asan_init" in f.read():
            raise TestSkip("AddressSanitizer holds freed memory in quarantine")
    workers = srv.children()
    pid = workers[0] if workers else srv.proc.pid
    if not os.path.exists("/proc/%d/status" % pid):
        raise TestSkip("no /proc here")
    return pid


def proc_status(pid, field):
    """The number of a field of /proc/PID/status (VmRSS, VmSize: in KB)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise TestFailure("no %s in /proc/%d/status" % (field, pid))


def voluntary_switches(pid):
    """The process's voluntary context switches (one per sleep it began)."""
    return proc_status(pid, "voluntary_ctxt_switches")


def children_of(pid):
    """Live (not zombie) processes whose parent is pid, from /proc, sorted."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        # the command name may contain spaces and parentheses: split after the last ')'
        fields = st[st.rindex(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(d))
    return sorted(out)


def open_fds(srv):
    """Open descriptors of the server's worker processes."""
    n = 0
    for pid in srv.children():
        n += len(os.listdir("/proc/%d/fd" % pid))
    return n


def settled_fds(srv, quiet=0.3, limit=5.0):
    """open_fds once it has stopped changing: the start-up probe's
    connection (connect and close) may still be open in the worker,
    which would make a baseline one too high."""
    deadline = time.time() + limit
    last = open_fds(srv)
    while time.time() < deadline:
        time.sleep(quiet)
        now = open_fds(srv)
        if now == last:
            break
        last = now
    return last


def tcp_sockets(port, local):
    """(local port, remote port, state) of the IPv4 TCP sockets whose local
    (local=True: the server ends) or remote port is port, from
    /proc/net/tcp; the state in hex as there (01 established, 06
    TIME_WAIT, 0A listening...)."""
    out = []
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            lp = int(fields[1].split(":")[1], 16)
            rp = int(fields[2].split(":")[1], 16)
            if (lp if local else rp) == port:
                out.append((lp, rp, fields[3]))
    return out


class Server:
    def __init__(self, root, args, root_dir=None):
        self.root = root
        self.args = list(args)
        self.root_dir = root_dir or root.path
        self.proc = None
        self.port = None
        self.err_path = None
        self.err_file = None
        self.expect_exit = False
        self.preexec = None             # e.g. resource limits for the server process

    def start(self):
        for attempt in range(10):
            port = free_port()
            fd, self.err_path = tempfile.mkstemp(prefix="cowd-stderr-", dir=self.root.tmp)
            self.err_file = os.fdopen(fd, "w+b")
            cmd = WRAPPER + [COWD, "--listen", "127.0.0.1:%d" % port, "--root", self.root_dir] + self.args
            self.proc = subprocess.Popen(cmd, preexec_fn=self.preexec,
                                         stdin=subprocess.DEVNULL, stdout=self.err_file,
                                         stderr=self.err_file)
            self.port = port
            deadline = time.time() + 10 * SLOW
            while time.time() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=1)
                    s.close()
                    return
                except OSError:
                    time.sleep(0.02)
            log = self.stderr()
            self.kill()
            if "in use" in log or "EADDRINUSE" in log:
                continue            # lost the race for the port: take another
            raise TestFailure("server did not start (%s): %s" % (" ".join(cmd), log[-2000:]))
        raise TestFailure("server did not start: no free port")

    def stderr(self):
        try:
            with open(self.err_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except (OSError, TypeError):
            return ""

    def health(self):
        """None if fine, else why the server is not."""
        log = self.stderr()
        for mark in SANITIZER_MARKS:
            if mark in log:
                i = log.index(mark)
                return "sanitizer report: " + log[max(0, i - 200):i + 1500]
        m = WORKER_DIED.search(log)
        if m:
            return "a worker process died: " + m.group(0)
        if self.proc is None:
            return "not started"
        rc = self.proc.poll()
        if rc is not None:
            return "server exited with status %s; stderr: %s" % (rc, log[-1500:])
        return None

    def children(self):
        """PIDs of the server's worker processes (cowd may fork them)."""
        return children_of(self.proc.pid)

    def serving_uids(self):
        """Effective uids of the processes that serve requests: the workers
        if the server forks any (they may have dropped root), else itself."""
        uids = []
        for pid in self.children() or [self.proc.pid]:
            try:
                with open("/proc/%d/status" % pid) as f:
                    for ln in f:
                        if ln.startswith("Uid:"):
                            uids.append(int(ln.split()[2]))
            except OSError:
                pass
        return uids

    def stop_checked(self):
        """Stops the server as kill() does (SIGTERM first); None if it
        stopped cleanly, else why not: a sanitizer report in its stderr
        (LeakSanitizer's comes at exit), or an exit status other than 0
        on SIGTERM."""
        if self.proc is None:
            return None
        why = self.health()         # a worker died, or the master, since the last look
        if why:
            self.kill()
            return why
        proc = self.proc
        self.kill()
        log = self.stderr()
        for mark in SANITIZER_MARKS:
            if mark in log:
                i = log.index(mark)
                return "sanitizer report: " + log[max(0, i - 200):i + 1500]
        if proc.returncode == -signal.SIGKILL:
            return "did not exit on SIGTERM, nor on a second one (killed); stderr: %s" % log[-1500:]
        if proc.returncode != 0:
            return "exit status %s on SIGTERM; stderr: %s" % (proc.returncode, log[-1500:])
        return None

    def kill(self):
        if self.proc is None:
            return
        kids = self.children()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(3 * SLOW)
            except subprocess.TimeoutExpired:
                # requests still in progress: a second one stops at once (README)
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(5 * SLOW)
                except subprocess.TimeoutExpired:
                    # a server that ignores both is a bug: the test that
                    # stopped it fails (run), and so does stop_checked
                    HARD_KILLED.append("cowd %s (pid %d)" % (" ".join(self.args) or "(default flags)",
                                                             self.proc.pid))
                    self.proc.kill()
                    self.proc.wait()
        # workers orphaned by a killed master: only those still serving our root
        for pid in kids:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    if self.root_dir.encode() not in f.read():
                        continue
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc = None
        if self.err_file:
            self.err_file.close()
            self.err_file = None

    # -- conveniences ------------------------------------------------------
    def conn(self, timeout=TIMEOUT):
        return Conn(self.port, timeout)

    def req(self, method, target, headers=None, version="HTTP/1.1", host="localhost", body=b"",
            common=True):
        """One request on a new connection; returns the response."""
        with self.conn() as c:
            c.send(request(method, target, headers, version, host, body))
            return c.response(method, common=common)

    def get(self, target, headers=None, **kw):
        return self.req("GET", target, headers, **kw)

    def raw(self, data, method="GET"):
        """Sends raw bytes on a new connection and returns (response, conn)."""
        c = self.conn()
        c.send(data)
        return c.response(method), c

    def assert_alive(self):
        """A normal GET on a NEW connection still gets the right answer."""
        h = self.health()
        if h:
            raise TestFailure("server unhealthy: " + h)
        if self.root_dir == self.root.path:
            path, want = "/hello.txt", HELLO
        else:                       # the demo site
            path = "/"
            with open(os.path.join(self.root_dir, "index.html"), "rb") as f:
                want = f.read()
        try:
            r = self.get(path)
        except (OSError, TestFailure) as e:
            raise TestFailure("server no longer answers a normal GET: %s" % e)
        eq(r.status_line, "HTTP/1.1 200 OK", "normal GET after hostile case")
        eq(r.body, want, "normal GET body after hostile case")


# ---------------------------------------------------------------------------
# registry and runner
# ---------------------------------------------------------------------------

TESTS = []
HARD_KILLED = []        # servers Server.kill() had to SIGKILL: each fails its test

# Flags of optional features, with the argument each takes: a build without
# the feature (--enable-minimal, --disable-listing, --disable-access-log)
# refuses the flag at start-up, and a test that needs it is skipped there.
OPTIONAL_FLAGS = {"--listing": (), "--listing-max": ("10",), "--listing-memory": ("64k",),
                  "--access-log": (os.devnull,),
                  "--log-format": ("common",)}
_build_has = {}


def build_has(flag):
    """Does this cowd build have the optional feature behind flag?  Asked of
    the binary itself: it rejects the flag before it would print --version."""
    if flag not in _build_has:
        cmd = [COWD, flag, *OPTIONAL_FLAGS[flag], "--version"]
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
        _build_has[flag] = r.returncode == 0
    return _build_has[flag]


def test(name, args=(), demo=False, needs=()):
    """Registers a test.  needs: optional-feature flags (OPTIONAL_FLAGS) the
    test uses other than in args; those in args are found by themselves."""
    def deco(fn):
        flags = tuple(needs) + tuple(a for a in args if a in OPTIONAL_FLAGS)
        TESTS.append((name, tuple(args), demo, flags, fn))
        return fn
    return deco


def unexpected_detail(e, srv):
    """Where an unexpected exception came from (the innermost line of a test
    file) and the end of the server's stderr, for a failure that may be rare."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if os.path.basename(f.filename).startswith("test_")]
    where = " [at %s:%d: %s]" % (os.path.basename(frames[-1].filename), frames[-1].lineno,
                                 frames[-1].line) if frames else ""
    log = srv.stderr().strip() if srv is not None else ""
    return where + (" [server stderr ends: %s]" % log[-600:].replace("\n", " | ") if log else "")


def run(argv):
    if not COWD or not os.access(COWD, os.X_OK):
        print("FAIL setup: COWD=%r is not an executable" % COWD)
        print("0 passed, 1 failed")
        return 1
    filt = argv[1] if len(argv) > 1 else None
    selected = [t for t in TESTS if filt is None or filt in t[0]]
    root = Root()
    root.settle()       # its files' validators, as most tests expect (once, 3 s at most)
    servers = {}
    passed = skipped = 0
    failures = []           # repeated at the end: a log's tail is often all one sees
    started = time.time()
    try:
        for name, args, demo, needs, fn in selected:
            key = (args, demo)
            t0 = time.time()
            try:
                srv = servers.get(key)
                missing = [f for f in needs if not build_has(f)]
                if missing:
                    raise TestSkip("this build has no %s" % ", ".join(missing))
                why = srv.health() if srv is not None else None
                if srv is None or why:
                    if srv is not None:
                        # it served the tests before this one, and has gone
                        # wrong since (a timeout's work after their checks)
                        failures.append("server %s, shared by earlier tests, before %s: %s"
                                        % (" ".join(args) or "(default flags)", name, why))
                        print("FAIL " + failures[-1])
                        srv.kill()
                    rd = os.path.join(SRCDIR, "conf", "www") if demo else None
                    srv = Server(root, args, rd)
                    srv.start()
                    servers[key] = srv
                srv.root = root
                hard_killed_before = len(HARD_KILLED)
                fn(srv)
                # whatever the test did, the server still serves a NEW connection
                srv.assert_alive()
                if len(HARD_KILLED) > hard_killed_before:
                    raise TestFailure("a server it stopped ignored SIGTERM twice and was killed: "
                                      + "; ".join(HARD_KILLED[hard_killed_before:]))
                print("PASS %s (%.2fs)" % (name, time.time() - t0))
                passed += 1
            except TestSkip as e:
                print("SKIP %s: %s" % (name, e))
                skipped += 1
            except TestFailure as e:
                failures.append("%s: %s" % (name, e))
                print("FAIL " + failures[-1])
            except Exception as e:        # a socket error etc.: the test fails, the run goes on
                failures.append("%s: %s: %s%s" % (name, type(e).__name__, e, unexpected_detail(e, srv)))
                print("FAIL " + failures[-1])
            sys.stdout.flush()
            # a server that died is reported by the test that killed it (or,
            # if that one passed or was skipped, here), then replaced
            srv = servers.get(key)
            why = srv.health() if srv is not None else None
            if why:
                if not failures or not failures[-1].startswith(name + ":"):
                    failures.append("%s: server unhealthy after the test: %s" % (name, why))
                    print("FAIL " + failures[-1])
                srv.kill()
                del servers[key]
    finally:
        for (args, demo), srv in servers.items():
            why = srv.stop_checked()
            if why:
                failures.append("server %s, at the end of the run: %s" % (" ".join(args) or "(default flags)", why))
                print("FAIL " + failures[-1])
        root.cleanup()
    for f in failures:
        print("# failed: " + f[:500])
    print("# %d skipped, %.1fs" % (skipped, time.time() - started))
    print("%d passed, %d failed" % (passed, len(failures)))
    return 0 if not failures else 1


FAULT_SHIM_C = r"""
/* LD_PRELOAD fault injection: the first fdopendir() fails with errno
 * FAULT_FDOPENDIR_ERRNO, and the FAULT_READDIR_AT-th readdir() call after it
 * fails with EIO (the listing test); a pread() at offset FAULT_PREAD_OFFSET
 * fails with EIO (the unreadable body test); the first pread() of
 * FAULT_PREAD_SCRAMBLE_SIZE bytes at offset 0 returns them all as '#' (a
 * copy torn by a write in progress); while the file
 * FAULT_SETGROUPS_FILE exists, setgroups() takes FAULT_SETGROUPS_SLEEP
 * seconds, then fails with EPERM if the file is still there (a worker slow
 * to start, then failing; or, with the file gone meanwhile, starting);
 * the first FAULT_ACCEPT_FAILS accept4() calls of a process fail with errno
 * FAULT_ACCEPT_ERRNO (a connection's pending network error); getpwnam() and
 * getgrnam() of the name FAULT_LOOKUP_NAME fail with errno FAULT_LOOKUP_ERRNO
 * (a directory service down); the FAULT_RESERVE_FAIL_AT-th open of /dev/null
 * with O_RDONLY|O_CLOEXEC in a process (the accept thread's reserve
 * descriptor) fails with ENFILE (the system's file table full); every
 * epoll_ctl() asking for EPOLLONESHOT (the park's, not Pth's) fails with
 * errno FAULT_EPOLL_ONESHOT_ERRNO (the kernel's epoll watch limit reached),
 * each failure adding a byte to the file FAULT_EPOLL_ONESHOT_MARK if set;
 * every sendfile() fails with errno FAULT_SENDFILE_ERRNO (a file system
 * that cannot splice); with FAULT_OPENAT2_ENOSYS set, every openat2 made
 * through syscall() fails with ENOSYS (a kernel before 5.6, or a BSD's
 * path: the open beneath the root is checked by name), each failure adding
 * a byte to the file FAULT_OPENAT2_MARK if set; with FAULT_NO_PROC_FD set,
 * opening /proc/self/fd fails with ENOENT (no /proc: a jail without it, a
 * BSD), so what was opened is checked by name; a read() that returns
 * FAULT_SLOW_READ_MIN bytes or more takes FAULT_SLOW_READ_US microseconds
 * longer (a slow server: a client can send faster than it reads). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static int env_int(const char *name)
{
    const char *v = getenv(name);
    return v != NULL ? atoi(v) : 0;
}

static int failed;

static int reserve_opens;

static int open_fails(const char *path, int flags)
{
    int at = env_int("FAULT_RESERVE_FAIL_AT");
    return at > 0 && strcmp(path, "/dev/null") == 0 &&
           (flags & (O_ACCMODE | O_CLOEXEC)) == (O_RDONLY | O_CLOEXEC) && ++reserve_opens == at;
}

int open(const char *path, int flags, ...)
{
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    mode_t mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (open_fails(path, flags)) {
        errno = ENFILE;
        return -1;
    }
    if (env_int("FAULT_NO_PROC_FD") != 0 && strcmp(path, "/proc/self/fd") == 0) {
        errno = ENOENT;
        return -1;
    }
    return real(path, flags, mode);
}

DIR *fdopendir(int fd)
{
    DIR *(*real)(int) = (DIR *(*)(int))dlsym(RTLD_NEXT, "fdopendir");
    if (!failed && env_int("FAULT_FDOPENDIR_ERRNO") != 0) {
        failed = 1;
        errno = env_int("FAULT_FDOPENDIR_ERRNO");
        return NULL;
    }
    return real(fd);
}

static int readdir_calls;

static int readdir_fails(void)
{
    return failed && ++readdir_calls == env_int("FAULT_READDIR_AT");
}

struct dirent *readdir(DIR *d)
{
    struct dirent *(*real)(DIR *) = (struct dirent *(*)(DIR *))dlsym(RTLD_NEXT, "readdir");
    if (readdir_fails()) {
        errno = EIO;
        return NULL;
    }
    return real(d);
}

struct dirent64 *readdir64(DIR *d)
{
    struct dirent64 *(*real)(DIR *) = (struct dirent64 *(*)(DIR *))dlsym(RTLD_NEXT, "readdir64");
    if (readdir_fails()) {
        errno = EIO;
        return NULL;
    }
    return real(d);
}

static int pread_fails(off_t offset)
{
    const char *v = getenv("FAULT_PREAD_OFFSET");
    return v != NULL && offset == (off_t)atoll(v);
}

static ssize_t scrambled(ssize_t got, void *buf, size_t n, off_t offset)
{
    static int done;
    if (!done && got == (ssize_t)n && offset == 0 && n > 0 &&
        (size_t)env_int("FAULT_PREAD_SCRAMBLE_SIZE") == n) {
        done = 1;
        memset(buf, '#', n);
    }
    return got;
}

ssize_t read(int fd, void *buf, size_t n)
{
    ssize_t (*real)(int, void *, size_t) = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
    ssize_t got = real(fd, buf, n);
    int min = env_int("FAULT_SLOW_READ_MIN");
    if (min > 0 && got >= min) {
        int e = errno;
        usleep((useconds_t)env_int("FAULT_SLOW_READ_US"));
        errno = e;
    }
    return got;
}

ssize_t pread(int fd, void *buf, size_t n, off_t offset)
{
    ssize_t (*real)(int, void *, size_t, off_t) =
        (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
    if (pread_fails(offset)) {
        errno = EIO;
        return -1;
    }
    return scrambled(real(fd, buf, n, offset), buf, n, offset);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t offset)
{
    ssize_t (*real)(int, void *, size_t, off64_t) =
        (ssize_t (*)(int, void *, size_t, off64_t))dlsym(RTLD_NEXT, "pread64");
    if (pread_fails((off_t)offset)) {
        errno = EIO;
        return -1;
    }
    return scrambled(real(fd, buf, n, offset), buf, n, (off_t)offset);
}

int setgroups(size_t n, const gid_t *list)
{
    int (*real)(size_t, const gid_t *) = (int (*)(size_t, const gid_t *))dlsym(RTLD_NEXT, "setgroups");
    const char *marker = getenv("FAULT_SETGROUPS_FILE");
    if (marker != NULL && access(marker, F_OK) == 0) {
        sleep((unsigned)env_int("FAULT_SETGROUPS_SLEEP"));
        if (access(marker, F_OK) == 0) {
            errno = EPERM;
            return -1;
        }
    }
    return real(n, list);
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    int (*real)(int, struct sockaddr *, socklen_t *, int) =
        (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    static int accept_fails;
    if (accept_fails < env_int("FAULT_ACCEPT_FAILS")) {
        accept_fails++;
        errno = env_int("FAULT_ACCEPT_ERRNO");
        return -1;
    }
    return real(fd, addr, len, flags);
}

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
    int (*real)(int, int, int, struct epoll_event *) =
        (int (*)(int, int, int, struct epoll_event *))dlsym(RTLD_NEXT, "epoll_ctl");
    if (ev != NULL && (ev->events & EPOLLONESHOT) && env_int("FAULT_EPOLL_ONESHOT_ERRNO") != 0) {
        const char *mark = getenv("FAULT_EPOLL_ONESHOT_MARK");
        int m = mark != NULL ? open(mark, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
        if (m >= 0) {
            ssize_t w = write(m, "x", 1);
            (void)w;
            close(m);
        }
        errno = env_int("FAULT_EPOLL_ONESHOT_ERRNO");
        return -1;
    }
    return real(epfd, op, fd, ev);
}

static int lookup_fails(const char *name)
{
    const char *n = getenv("FAULT_LOOKUP_NAME");
    return n != NULL && strcmp(name, n) == 0;
}

struct passwd *getpwnam(const char *name)
{
    struct passwd *(*real)(const char *) = (struct passwd *(*)(const char *))dlsym(RTLD_NEXT, "getpwnam");
    if (lookup_fails(name)) {
        errno = env_int("FAULT_LOOKUP_ERRNO");
        return NULL;
    }
    return real(name);
}

struct group *getgrnam(const char *name)
{
    struct group *(*real)(const char *) = (struct group *(*)(const char *))dlsym(RTLD_NEXT, "getgrnam");
    if (lookup_fails(name)) {
        errno = env_int("FAULT_LOOKUP_ERRNO");
        return NULL;
    }
    return real(name);
}

ssize_t sendfile(int out, int in, off_t *offset, size_t count)
{
    ssize_t (*real)(int, int, off_t *, size_t) =
        (ssize_t (*)(int, int, off_t *, size_t))dlsym(RTLD_NEXT, "sendfile");
    if (env_int("FAULT_SENDFILE_ERRNO") != 0) {
        errno = env_int("FAULT_SENDFILE_ERRNO");
        return -1;
    }
    return real(out, in, offset, count);
}

ssize_t sendfile64(int out, int in, off_t *offset, size_t count)
{
    return sendfile(out, in, offset, count);
}

long syscall(long number, ...)
{
    /* six arguments, as glibc's own syscall() passes on whatever it is given */
    va_list ap;
    va_start(ap, number);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
#ifdef SYS_openat2
    if (number == SYS_openat2 && env_int("FAULT_OPENAT2_ENOSYS") != 0) {
        const char *mark = getenv("FAULT_OPENAT2_MARK");
        if (mark != NULL) {
            int fd = open(mark, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
            if (fd >= 0) {
                (void)!write(fd, "o", 1);
                close(fd);
            }
        }
        errno = ENOSYS;
        return -1;
    }
#endif
    static long (*real)(long, ...);
    if (real == NULL)
        real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(number, a1, a2, a3, a4, a5, a6);
}
"""


def strace_worker(srv, out_path, calls):
    """strace attached to srv's worker, tracing calls, until .terminate()."""
    if WRAPPER:
        raise TestSkip("the server runs under a wrapper (%s), whose system calls would be traced" % WRAPPER[0])
    if shutil.which("strace") is None:
        raise TestSkip("strace is not installed (scripts/install-deps --test installs it)")
    # the listen socket accepts before the master has forked the worker:
    # once a request is answered, the worker (if it forks one) exists
    try:
        srv.get("/")
    except (OSError, TestFailure, Closed):
        pass
    worker = (srv.children() or [srv.proc.pid])[0]
    tr = subprocess.Popen(["strace", "-f", "-e", "trace=" + calls, "-o", out_path, "-p", str(worker)],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    line = tr.stderr.readline().decode("utf-8", "replace")     # "Process N attached", or why not
    if "attached" not in line:
        tr.wait(5)
        raise TestSkip("strace cannot attach here: %s" % line.strip())
    return tr


def fault_shim(tmp):
    """Builds FAULT_SHIM_C as a shared library; skips where it cannot be
    preloaded into the server (no compiler, a wrapper, a sanitizer build)."""
    if WRAPPER:
        raise TestSkip("the server runs under %s" % WRAPPER[0])
    with open(COWD, "rb") as f:
        if b"libasan" in f.read():
            raise TestSkip("a sanitizer build: its runtime must be loaded first")
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None or not sys.platform.startswith("linux"):
        raise TestSkip("needs a C compiler and glibc's dlsym(RTLD_NEXT)")
    src = os.path.join(tmp, "fault_shim.c")
    lib = os.path.join(tmp, "fault_shim.so")
    with open(src, "w") as f:
        f.write(FAULT_SHIM_C)
    subprocess.run([cc, "-shared", "-fPIC", "-o", lib, src, "-ldl"], check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return lib


class preloaded_faults:
    """with preloaded_faults(tmp, FAULT_...=value): servers started inside
    have fault_shim preloaded and those faults set (skips where it cannot
    be preloaded)."""
    def __init__(self, tmp, **faults):
        self.env = dict(faults, LD_PRELOAD=fault_shim(tmp))

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


def fault_mark(tmp, what):
    """An empty file for a FAULT_*_MARK that the workers (nobody, if the
    tests run as root) can append to."""
    fd, mark = tempfile.mkstemp(prefix="cowd-%s-" % what, dir=tmp)
    os.close(fd)
    os.chmod(mark, 0o666)
    return mark


def faulty_server(srv, args, **faults):
    """A server of srv's root with fault_shim preloaded and faults (its
    environment variables) set; started, the caller kills it."""
    with preloaded_faults(srv.root.tmp, **faults):
        own = Server(srv.root, args)
        own.start()
    return own
