#!/usr/bin/env python3
"""netfuzz.py: a network fuzzer for the whole server.  Many client threads
send generated requests (every method, target form, framing, Range and
conditional header the server knows) and mutated ones (flipped bytes,
dictionary tokens, cut and repeated spans, bare LF, obs-fold), pipelined,
split at random points with pauses, ended by half-closes and resets, while a
document is truncated, replaced and grown underneath.

What must hold for any input, checked as it runs:
  * every reply stream starts with a status line, and no reply is a 500;
  * on connections of well-formed requests, each reply's framing is exact
    and its bytes are the file's (or the range's), and a close comes only
    where the client asked for one or after an error;
  * a fresh connection's request is answered in time all along;
and by the caller at the end: the server is up with no sanitizer report and
holds no more sockets than before.

Used by tests/integration/test_netfuzz.py (against the suite's server), and
on its own for long campaigns, e.g. with a sanitizer build:
    tests/integration/netfuzz.py --cowd build-sanitizers/src/cowd --seconds 600
The seed is printed; the same seed sends the same traffic from each thread
(their interleaving still varies).
"""
import argparse
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

from cowdtest import SANITIZER_MARKS, children_of, free_port

STATUS_RE = re.compile(rb"HTTP/1\.[01] ([1-5][0-9][0-9]) [^\r\n]*\r\n")

# targets the server must refuse or treat specially, beside the files
ODD_TARGETS = ["/", "/missing", "/missing/", "/%2e%2e/etc/passwd", "/a/../../etc/passwd", "/%00", "/x%2fy",
               "/%zz", "//", "*", "http://localhost/", "http://other.example/", "/\xff", "/?q=1#f",
               "/" + "a" * 300]
METHODS = ["GET"] * 8 + ["HEAD"] * 2 + ["POST", "PUT", "OPTIONS", "DELETE", "TRACE", "CONNECT", "PATCH", "BREW"]
DATES = ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
         "Thu, 01 Jan 2099 00:00:00 GMT", "garbage", ""]
RANGES = ["0-9", "5-", "-20", "0-0,2-3,10-", "100000-", "1-2,1-2,1-2", "9-3", "0-9999999999999999999999"]
SMALL_RANGES = ["0-9", "1000-1019", "0-0,2-3,10-20", "100-199,5000-5099"]
TOKENS = [b"GET ", b"HEAD ", b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", b"\r\n", b"\r\n\r\n", b"\n", b"\r", b"\x00",
          b"Host: ", b"Content-Length: ", b"Transfer-Encoding: chunked", b"chunked", b"Connection: close",
          b"Expect: 100-continue", b"Range: bytes=", b"0-", b"-1", b",", b"If-None-Match: ", b"*", b"\"x\"",
          b"%2e%2e", b"/../", b"99999999999999999999", b"0\r\n\r\n", b"ffffffff\r\n", b" ", b"\t", b":",
          b"a" * 300, b"HTTP/2.0", b"\xff\xfe", b";ext=1", b"0x10", b"Content-Length: 0\r\n"]


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.hostile_conns = 0
        self.clean_replies = 0
        self.status = {}
        self.failures = []
        self.slowest_health = 0.0

    def fail(self, msg):
        with self.lock:
            if len(self.failures) < 20:
                self.failures.append(msg[:3000])

    def count(self, code, clean):
        with self.lock:
            self.status[code] = self.status.get(code, 0) + 1
            if clean:
                self.clean_replies += 1

    def summary(self):
        return ("%d hostile connections, %d checked replies on clean ones; statuses %s; slowest health "
                "request %.2f s" % (self.hostile_conns, self.clean_replies, dict(sorted(self.status.items())),
                                    self.slowest_health))


class Site:
    """What the fuzzer knows of the document root: files, URL path -> bytes
    (the replies for them are checked); others, more paths to request
    (directories, links out of the root...); ranged, big files, URL path ->
    size, only ever asked for ranges within their first 5,100 bytes (files
    needs no more of them); changing, the URL path and file name of a
    document the fuzzer keeps changing; health, the file a fresh connection
    asks for now and then."""

    def __init__(self, files, others=(), ranged=(), changing=None, health=None):
        self.files = dict(files)
        self.ranged = dict(ranged)
        self.changing = changing
        self.targets = sorted(self.files) + list(others) + ODD_TARGETS + ([changing[0]] if changing else [])
        self.health = health


def gen_request(rnd, site, keep):
    """A well-formed request: (bytes, method, target)."""
    method = rnd.choice(METHODS)
    target = rnd.choice(site.targets)
    version = "HTTP/1.0" if rnd.random() < 0.1 else "HTTP/1.1"
    h = []
    if rnd.random() < 0.97:
        h.append("Host: " + rnd.choice(["localhost", "127.0.0.1:80", "[::1]", "a.b", "x" * 40]))
    if not keep:
        h.append("Connection: close")
    elif version == "HTTP/1.0":
        h.append("Connection: keep-alive")
    if target in site.ranged:
        h.append("Range: bytes=" + rnd.choice(SMALL_RANGES))
    elif rnd.random() < 0.3:
        h.append("Range: bytes=" + rnd.choice(RANGES))
    if target not in site.ranged and rnd.random() < 0.2:
        h.append(rnd.choice(["If-None-Match: *", "If-None-Match: \"nope\"", "If-Match: \"nope\"", "If-Match: *",
                             "If-Modified-Since: " + rnd.choice(DATES),
                             "If-Unmodified-Since: " + rnd.choice(DATES),
                             "If-Range: " + rnd.choice(DATES + ["\"etag\""])]))
    if rnd.random() < 0.1:
        h.append("Accept-Encoding: gzip, deflate")
    if rnd.random() < 0.1:
        h.append("X-Long: " + "v" * rnd.randrange(10, 3000))
    body = b""
    r = rnd.random()
    if r < 0.15:
        body = bytes(rnd.randrange(97, 123) for _ in range(rnd.randrange(0, 3000)))
        h.append("Content-Length: %d" % len(body))
    elif r < 0.25:
        parts = []
        for _ in range(rnd.randrange(0, 4)):
            c = bytes(rnd.randrange(97, 123) for _ in range(rnd.randrange(1, 500)))
            parts.append(b"%x%s\r\n%s\r\n" % (len(c), rnd.choice([b"", b";a=b"]), c))
        parts.append(b"0\r\n" + rnd.choice([b"", b"Trailer: x\r\n"]) + b"\r\n")
        body = b"".join(parts)
        h.append("Transfer-Encoding: chunked")
    if body and rnd.random() < 0.2:
        h.append("Expect: 100-continue")
    rnd.shuffle(h)
    head = "%s %s %s\r\n%s\r\n" % (method, target, version, "".join(x + "\r\n" for x in h))
    return head.encode("latin-1") + body, method, target


def mutate(rnd, data):
    b = bytearray(data)
    for _ in range(rnd.randrange(1, 5)):
        op = rnd.randrange(8)
        pos = rnd.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(pos, len(b) - 1)] = rnd.randrange(256)
        elif op == 1:
            b[pos:pos] = rnd.choice(TOKENS)
        elif op == 2:
            del b[pos:pos + rnd.randrange(1, 20)]
        elif op == 3:
            b[pos:pos] = b[pos:pos + rnd.randrange(1, 40)] * rnd.randrange(1, 4)
        elif op == 4:
            b = bytearray(bytes(b).replace(b"\r\n", b"\n", rnd.randrange(1, 3)))
        elif op == 5:
            b[pos:pos] = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 8)))
        elif op == 6:
            del b[pos:]
        else:
            b[pos:pos] = b"\r\n " + b"x" * rnd.randrange(0, 10)     # obs-fold
    return bytes(b)


def send_split(rnd, s, wire):
    """Sends wire at once or in pieces, with pauses of at most 0.2 s in all
    (well inside the server's 2 s timeouts: a well-formed request must not
    look like a slow client's)."""
    if rnd.random() < 0.5:
        s.sendall(wire)
        return
    i = 0
    paused = 0.0
    while i < len(wire):
        j = i + rnd.choice([1, 2, 3, 7, 50, 500, 5000])
        s.sendall(wire[i:j])
        i = j
        if rnd.random() < 0.05 and paused < 0.2:
            pause = rnd.random() * 0.02
            time.sleep(pause)
            paused += pause


class Reader:
    def __init__(self, sock, timeout):
        self.s = sock
        self.buf = bytearray()
        self.timeout = timeout

    def more(self):
        self.s.settimeout(self.timeout)
        d = self.s.recv(65536)
        if not d:
            raise EOFError("closed by the server")
        self.buf += d

    def through(self, sep, what):
        """The bytes up to and including sep, at most 64 KiB of them."""
        while sep not in self.buf:
            if len(self.buf) > 65536:
                raise ValueError("%s over 64 KiB: %r" % (what, bytes(self.buf[:200])))
            self.more()
        i = self.buf.index(sep) + len(sep)
        out = bytes(self.buf[:i])
        del self.buf[:i]
        return out

    def line(self):
        return self.through(b"\r\n", "line")[:-2]

    def exactly(self, n):
        while len(self.buf) < n:
            self.more()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def head(self):
        head = self.through(b"\r\n\r\n", "reply head")
        m = STATUS_RE.match(head)
        if not m:
            raise ValueError("bad status line: %r" % head[:200])
        hdrs = {}
        for ln in head[m.end():-4].split(b"\r\n"):
            if not ln:
                continue            # "HTTP/1.1 100 Continue\r\n\r\n": no fields
            k, sep, v = ln.partition(b":")
            if not sep or not k or k != k.strip():
                raise ValueError("bad reply header line %r" % ln)
            hdrs.setdefault(k.decode("latin-1").lower(), []).append(v.strip().decode("latin-1"))
        return int(m.group(1)), hdrs

    def chunked(self):
        body = bytearray()
        while True:
            size = int(self.line().split(b";")[0], 16)
            if size == 0:
                while self.line():
                    pass
                return bytes(body)
            body += self.exactly(size + 2)[:-2]


def check_reply(site, method, target, code, hdrs, body, stats):
    path = urllib.parse.urlsplit(target).path if target.startswith("http://localhost/") else target
    path = path.split("?")[0].split("#")[0]
    data = site.files.get(path)
    if data is None or method == "HEAD":
        return
    if code == 200 and path in site.ranged:
        stats.fail("clean: a 200 for a range of %s" % target)
    elif code == 200 and body != data:
        stats.fail("clean: the 200 for %s is not the file (%d bytes, file %d)" % (target, len(body), len(data)))
    if code == 206 and "content-range" in hdrs:
        m = re.match(r"bytes (\d+)-(\d+)/(\d+)$", hdrs["content-range"][0])
        if not m:
            stats.fail("clean: bad Content-Range %r for %s" % (hdrs["content-range"], target))
        elif int(m.group(3)) != site.ranged.get(path, len(data)) or body != data[int(m.group(1)):int(m.group(2)) + 1]:
            stats.fail("clean: the 206 %s for %s is not that range of the file" % (m.group(0), target))


def clean_conn(rnd, port, site, stats, slow):
    """Well-formed requests, pipelined in random groups, split at random
    points; every reply's framing and bytes are checked."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5 * slow)
    rd = Reader(s, 5 * slow)
    n = rnd.randrange(1, 12)
    reqs = [gen_request(rnd, site, keep=i < n - 1) for i in range(n)]
    sent = 0
    group = []
    send_error = None
    try:
        while sent < n:
            group = reqs[sent:sent + rnd.randrange(1, 4)]
            try:
                send_split(rnd, s, b"".join(g[0] for g in group))
            except OSError as e:
                send_error = e      # closed after an error reply, which is still to be read
            for data, method, target in group:
                code, hdrs = rd.head()
                while code < 200:
                    stats.count(code, True)
                    code, hdrs = rd.head()
                stats.count(code, True)
                if code == 500:
                    stats.fail("clean: 500 for %r" % data[:300])
                try:
                    if method == "HEAD" or code in (204, 304):
                        body = b""
                    elif "transfer-encoding" in hdrs:
                        body = rd.chunked()
                    elif "content-length" in hdrs:
                        body = rd.exactly(int(hdrs["content-length"][0]))
                    else:
                        stats.fail("clean: reply %d without a length to %r" % (code, data[:200]))
                        return
                except EOFError:
                    if site.changing is not None and target == site.changing[0]:
                        return      # it shrank while being sent: a close is the only honest end
                    raise
                if site.changing is None or target != site.changing[0]:
                    check_reply(site, method, target, code, hdrs, body, stats)
                if any("close" in v.lower() for v in hdrs.get("connection", [])):
                    if code < 400 and data is not reqs[-1][0]:
                        stats.fail("clean: a close after %d to %r" % (code, data[:200]))
                    return
            sent += len(group)
    except (OSError, EOFError, ValueError) as e:
        stats.fail("clean: %s: %s (send error: %r); next requests %r" %
                   (type(e).__name__, e, send_error, [g[0][:200] for g in group]))
    finally:
        s.close()


def hostile_conn(rnd, port, site, stats, slow):
    """Mutated requests among good ones; only what holds for any input is
    checked: the stream starts with a status line and has no 500."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5 * slow)
    try:
        wire = b"".join(mutate(rnd, gen_request(rnd, site, rnd.random() < 0.7)[0]) if rnd.random() < 0.7
                        else gen_request(rnd, site, True)[0] for _ in range(rnd.randrange(1, 6)))
        end = rnd.randrange(5)
        try:
            send_split(rnd, s, wire)
            if end == 0:        # reset at once
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            if end == 1:
                s.shutdown(socket.SHUT_WR)
        except OSError:         # the server has closed already
            return
        got = bytearray()
        deadline = time.time() + (1.0 if end == 2 else 4.0) * slow
        while time.time() < deadline and len(got) < 4 << 20:
            s.settimeout(max(0.01, deadline - time.time()))
            try:
                d = s.recv(65536)
            except OSError:
                break
            if not d:
                break
            got += d
        if got and not STATUS_RE.match(bytes(got[:4096])) and not got.startswith(b"HTTP/1.1 "):
            stats.fail("hostile: the reply starts %r, to %r" % (bytes(got[:80]), wire[:300]))
        for m in STATUS_RE.finditer(bytes(got)):
            if m.group(1) == b"500":
                stats.fail("hostile: 500 to %r" % wire[:300])
        if end == 3:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    finally:
        s.close()
        with stats.lock:
            stats.hostile_conns += 1


def health(port, site, stats, slow):
    """A request on a fresh connection, answered whole within 3 s (x slow)."""
    t0 = time.time()
    want = site.files[site.health]
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=3 * slow)
        s.sendall(b"GET %s HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n" % site.health.encode())
        got = bytearray()
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
        s.close()
        if not got.startswith(b"HTTP/1.1 200 ") or not got.endswith(b"\r\n\r\n" + want):
            stats.fail("health: %r" % bytes(got[:200]))
    except OSError as e:
        stats.fail("health: %s after %.2f s" % (e, time.time() - t0))
    took = time.time() - t0
    stats.slowest_health = max(stats.slowest_health, took)


def changer(path, stop, rnd):
    """Truncates, replaces, grows and re-dates a file while it is served."""
    while not stop.is_set():
        k = rnd.randrange(4)
        try:
            if k == 0:
                with open(path, "r+b") as f:
                    f.truncate(rnd.randrange(0, 20000))
            elif k == 1:
                with open(path + ".new", "wb") as f:
                    f.write(bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 40000))))
                os.chmod(path + ".new", 0o644)
                os.replace(path + ".new", path)
            elif k == 2:
                with open(path, "ab") as f:
                    f.write(b"y" * rnd.randrange(1, 5000))
            else:
                t = time.time() - rnd.randrange(100)
                os.utime(path, (t, t))
        except OSError:
            pass
        stop.wait(rnd.random() * 0.3)


def run(port, site, seconds, seed, clients=12, slow=1):
    """Fuzzes the server on port for seconds; returns the Stats."""
    stats = Stats()
    end = time.time() + seconds
    stop = threading.Event()

    def client(i):
        rnd = random.Random(seed * 1000 + i)
        while time.time() < end:
            try:
                if rnd.random() < 0.4:
                    clean_conn(rnd, port, site, stats, slow)
                else:
                    hostile_conn(rnd, port, site, stats, slow)
            except OSError as e:
                stats.fail("client %d: %s" % (i, e))
                time.sleep(0.1)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    if site.changing:
        threads.append(threading.Thread(target=changer, args=(site.changing[1], stop, random.Random(seed)),
                                        daemon=True))
    for t in threads:
        t.start()
    while time.time() < end:
        time.sleep(1)
        health(port, site, stats, slow)
    stop.set()
    for t in threads:
        t.join(30 * slow)
        if t.is_alive():
            stats.fail("a client thread did not finish")
    health(port, site, stats, slow)
    return stats


def sockets_of(pids):
    n = 0
    for pid in pids:
        try:
            for fd in os.listdir("/proc/%d/fd" % pid):
                try:
                    n += os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
                except OSError:
                    pass
        except OSError:
            pass
    return n


def settled_sockets(pids, base, limit):
    """The processes' socket count once back at base, or after limit seconds."""
    deadline = time.time() + limit
    n = sockets_of(pids)
    while n > base and time.time() < deadline:
        time.sleep(0.2)
        n = sockets_of(pids)
    return n


def make_site(root):
    rnd = random.Random(1)
    files = {}
    for name, size in (("small.txt", 100), ("f2k.bin", 2048), ("f12k.bin", 12500), ("f64k.bin", 65536),
                       ("f300k.bin", 300000), ("empty", 0), ("dir/a.html", 700), ("dir/sub/b.css", 3000),
                       ("idx/index.html", 500), ("sp ace%.txt", 50)):
        data = bytes(rnd.randrange(256) for _ in range(size))
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        files["/" + urllib.parse.quote(name)] = data
    os.symlink("small.txt", os.path.join(root, "link.txt"))
    files["/link.txt"] = files["/small.txt"]
    os.symlink("/etc/passwd", os.path.join(root, "outside"))
    with open(os.path.join(root, "changing.bin"), "wb") as f:
        f.write(b"c" * 20000)
    for d, _, fs in os.walk(root):
        os.chmod(d, 0o755)
        for f in fs:
            if not os.path.islink(os.path.join(d, f)):
                os.chmod(os.path.join(d, f), 0o644)
    return Site(files, others=["/dir/", "/dir", "/dir/sub/", "/idx/", "/idx", "/outside"],
                changing=("/changing.bin", os.path.join(root, "changing.bin")), health="/f2k.bin")


def main():
    ap = argparse.ArgumentParser(description="Fuzz a cowd binary over loopback (see the top of this file).")
    ap.add_argument("--cowd", required=True, help="the server binary")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--clients", type=int, default=12)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--args", default="--threads 8 --keepalive-timeout 2 --header-timeout 2 --body-timeout 2 "
                    "--send-timeout 3 --cache-entries 6 --cache-size 200k --cache-validate 0 "
                    "--max-body-discard 64k --max-connections 64",
                    help="server flags (default: small limits, so that every limit is reached)")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 30)
    print("netfuzz: seed %d, %g s, %d clients" % (seed, a.seconds, a.clients), flush=True)
    tmp = tempfile.mkdtemp(prefix="netfuzz-")
    os.chmod(tmp, 0o755)
    root = os.path.join(tmp, "root")
    os.mkdir(root)
    site = make_site(root)
    extra = []
    for flag, val in (("--listing", []), ("--access-log", [os.path.join(tmp, "access.log")])):
        if subprocess.run([a.cowd, flag, *val, "--version"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            extra += [flag, *val]
    port = free_port()
    errpath = os.path.join(tmp, "stderr")
    with open(errpath, "wb") as err:
        proc = subprocess.Popen([a.cowd, "--listen", "127.0.0.1:%d" % port, "--root", root] + extra +
                                a.args.split(), stdout=err, stderr=err, stdin=subprocess.DEVNULL)
    failures = []
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    time.sleep(0.5)
    workers = children_of(proc.pid) or [proc.pid]
    base = sockets_of(workers)
    stats = run(port, site, a.seconds, seed, a.clients)
    # past the keep-alive, header and linger timeouts: what the clients left has ended
    left = settled_sockets(workers, base, 6)
    if left > base:
        failures.append("sockets: %d before, %d after the clients ended" % (base, left))
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            failures.append("did not stop within 30 s of SIGTERM")
    if proc.returncode != 0:
        failures.append("exit status %s" % proc.returncode)
    with open(errpath, "rb") as f:
        log = f.read().decode("utf-8", "replace")
    for mark in SANITIZER_MARKS:
        if mark in log:
            i = log.index(mark)
            failures.append("sanitizer report: " + log[max(0, i - 300):i + 3000])
            break
    failures = stats.failures + failures
    print("netfuzz: " + stats.summary())
    for f in failures:
        print("FAIL: " + f)
    if failures:
        print("netfuzz: seed %d; the server's stderr and root are kept in %s" % (seed, tmp))
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
