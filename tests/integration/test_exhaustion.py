"""Descriptor exhaustion: with the worker out of descriptors, waiting clients
get a clear 503 (the reserve descriptor), the accept thread does not spin,
and the server recovers as soon as descriptors are free again."""
import resource
import socket
import time

from cowdtest import WRAPPER, TestFailure, TestSkip, check, eq, request, test

LIMIT = 64


def low_nofile():
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        st = f.read()
    fields = st[st.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


import os  # noqa: E402  (used by cpu_seconds)


@test("exhaustion: out of descriptors: 503 for new clients, no busy loop, recovery",
      ["--user", "root"])
def _(srv):
    # Valgrind keeps the top descriptors for itself and reports EMFILE below
    # the real limit, but for accept() only after the kernel has accepted:
    # it closes the new socket (a reset for that client) and fails the call.
    # So clients are lost in a way cowd cannot see, and a 503 cannot be promised.
    if WRAPPER and os.path.basename(WRAPPER[0]) == "valgrind":
        raise TestSkip("under valgrind, accept() past valgrind's descriptor reserve resets the client")
    # restart this test's server with a hard descriptor limit of 64
    srv.kill()
    srv.preexec = low_nofile
    srv.start()
    hold = []
    try:
        # connections with a request begun each take a descriptor in the
        # worker (silent ones would not: --defer-accept keeps them in the
        # kernel until their first bytes arrive)
        for _ in range(LIMIT + 20):
            h = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            h.sendall(b"GET /hello.txt HTTP/1.1\r\n")
            hold.append(h)
        time.sleep(0.5)
        # a new client now gets 503 (or, at worst, waits in the backlog: not acceptable)
        s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
        s.sendall(b"GET /hello.txt HTTP/1.1\r\nHost: t\r\n\r\n")
        data = b""
        try:
            while True:
                d = s.recv(4096)
                if not d:
                    break
                data += d
        except socket.timeout:
            raise TestFailure("no answer while out of descriptors (got %r)" % data[:100])
        s.close()
        check(data.startswith(b"HTTP/1.1 503 Service Unavailable\r\n"), "503: %r" % data[:80])
        check(b"Retry-After: 1\r\n" in data and b"Date: " in data, "503 headers")
        # the accept thread backs off: little CPU while exhausted
        workers = srv.children()
        check(workers, "worker found")
        c0 = cpu_seconds(workers[0])
        time.sleep(1.0)
        used = cpu_seconds(workers[0]) - c0
        check(used < 0.3, "worker CPU while exhausted: %.2fs in 1s" % used)
    finally:
        for h in hold:
            h.close()
    # descriptors free again: normal service
    deadline = time.time() + 10
    while True:
        try:
            r = srv.get("/hello.txt")
            if r.status_line == "HTTP/1.1 200 OK":
                break
        except (TestFailure, OSError):
            pass
        if time.time() > deadline:
            raise TestFailure("server did not recover after descriptors were freed")
        time.sleep(0.2)
    eq(r.body, b"Hello, world!\n", "body after recovery")


def nofile_128():
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))


@test("exhaustion: the file cache never uses up the descriptors (many distinct files, low limit)",
      ["--user", "root"])
def _(srv):
    # Before: every small cached file kept its descriptor open, so after about
    # a hundred files under a limit of 128 every uncached file got 503 for good.
    small = {"many/s%03d.txt" % i: b"small file %d\n" % i for i in range(300)}
    large = {"many/l%02d.bin" % i: bytes([65 + i % 26]) * (40 * 1024) for i in range(60)}
    for rel, body in list(small.items()) + list(large.items()):
        srv.root.write(rel, body)
    srv.kill()
    srv.preexec = nofile_128
    srv.start()
    c = srv.conn()
    for rel, body in list(small.items()) + list(large.items()) + list(small.items())[:20]:
        c.send(request("GET", "/" + rel))
        r = c.response()
        eq(r.status_line, "HTTP/1.1 200 OK", "GET /%s under a 128-descriptor limit" % rel)
        eq(r.body, body, "body of /%s" % rel)
    c.close()
    # and the worker is not left near its limit: count its descriptors
    workers = srv.children()
    check(workers, "worker found")
    if not os.path.isdir("/proc/%d/fd" % workers[0]):
        return
    n = len(os.listdir("/proc/%d/fd" % workers[0]))
    check(n <= 128 // 4 + 24, "worker holds %d descriptors under a limit of 128" % n)
