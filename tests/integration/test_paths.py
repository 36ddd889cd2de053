"""Request paths: traversal, decoding, symlinks, special files."""

import ctypes
import errno
import os
import re
import shutil
import subprocess
import sys
import time

import cowdtest
from cowdtest import DIGITS, HELLO, INDEX, SECRET, SLOW, Server, TestSkip, check, eq, faulty_server, request, test

BAD = "HTTP/1.1 400 Bad Request"
IN_OPEN = 0x20


def no_secret(r):
    check(SECRET not in r.body and b"root:" not in r.body, "file outside the root was served!")


@test("path: traversal attempts are 400 and never the file")
def _(srv):
    for target in ("/%2e%2e/etc/passwd", "/../etc/passwd", "/a/../../etc/passwd", "/%2E%2E/etc/passwd",
                   "/..%2fetc/passwd", "/dir/../../etc/passwd", "/./../etc/passwd", "/..",
                   "/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/../outside/secret.txt"):
        r = srv.get(target)
        eq(r.status_line, BAD, target)
        no_secret(r)
    srv.assert_alive()


@test("path: absolute-form traversal is 400")
def _(srv):
    r = srv.get("http://localhost/../etc/passwd")
    eq(r.status_line, BAD, "status")
    no_secret(r)


@test("path: %252e%252e is decoded once (a literal name, 404)")
def _(srv):
    r = srv.get("/%252e%252e/etc/passwd")
    eq(r.status_line, "HTTP/1.1 404 Not Found", "status")
    srv.root.write("%2e%2e/lit.txt", b"literal\n")
    eq(srv.get("/%252e%252e/lit.txt").body, b"literal\n", "literal %2e%2e directory")


@test("path: /docs/../index.html resolves inside the root")
def _(srv):
    r = srv.get("/docs/../index.html")
    eq(r.status_line, "HTTP/1.1 200 OK", "status")
    eq(r.body, INDEX, "body")
    eq(srv.get("/./dir/./index.html").status, 200, "dot segments")
    eq(srv.get("//hello.txt").body, HELLO, "double slash")
    eq(srv.get("/docs/%2e%2e/hello.txt").body, HELLO, "encoded dot-dot inside the root")


@test("path: %00 is 400")
def _(srv):
    for t in ("/hello.txt%00", "/hello.txt%00.html", "/%00"):
        eq(srv.get(t).status_line, BAD, t)
    srv.assert_alive()


@test("path: %0d%0a is 400 with no header injection")
def _(srv):
    for t in ("/x%0d%0aSet-Cookie:%20a=b", "/dir%0d%0aLocation:%20http://evil/", "/%0aX-Injected:%201",
              "/hello.txt%0d"):
        r = srv.get(t)
        eq(r.status_line, BAD, t)
        for k, _v in r.headers:
            check(k.lower() not in ("set-cookie", "x-injected"), "injected header %s" % k)
        eq(r.get("Location"), None, "Location on " + t)
    # a query with encoded CRLF on a redirect stays encoded in Location
    r = srv.get("/dir?a=%0d%0aX-Injected:%201")
    eq(r.status_line, "HTTP/1.1 301 Moved Permanently", "redirect")
    eq(r.get("Location"), "/dir/?a=%0d%0aX-Injected:%201", "Location keeps the encoding")
    eq(r.get("X-Injected"), None, "injected header")
    srv.assert_alive()


@test("path: percent-decoding (%41 is A, %20 and %26)")
def _(srv):
    eq(srv.get("/%41.txt").body, b"capital A\n", "%41")
    eq(srv.get("/h%65llo.txt").body, HELLO, "%65")
    eq(srv.get("/a%20file%20%26%20%3cx%3e.txt").body, b"weird name\n", "space, & and <")
    eq(srv.get("/hello.txt?%zz").body, HELLO, "query is not decoded as a path")


@test("path: bad percent-encoding is 400")
def _(srv):
    for t in ("/%zz", "/%4", "/hello.txt%"):
        eq(srv.get(t).status_line, BAD, t)
    srv.assert_alive()


@test("path: fragment-less request with a '#' is harmless")
def _(srv):
    r = srv.get("/hello.txt%23frag")
    eq(r.status_line, "HTTP/1.1 404 Not Found", "encoded #")


@test("path: symlink leading out of the root is 403 by default")
def _(srv):
    for t in ("/link-out.txt", "/link-out-dir/secret.txt"):
        r = srv.get(t)
        eq(r.status_line, "HTTP/1.1 403 Forbidden", t)
        no_secret(r)


# A link planted in the root whose target is outside answered 403 if the
# target existed and 404 if not, and one that went out and came back was
# served (200) or not (403) as a directory outside existed: whoever could
# plant links (an upload that keeps them, a shared tree) could learn which
# files exist anywhere on the machine.  Now any lookup that leaves the root
# is 403, found or not.
def planted_links(srv):
    d = os.path.join(srv.root.path, "planted")
    shutil.rmtree(d, ignore_errors=True)
    os.mkdir(d)
    out = srv.root.outside
    links = {
        "abs-exists": os.path.join(out, "secret.txt"),
        "abs-missing": os.path.join(out, "no-such-file"),
        "abs-missing-dir": os.path.join(out, "no-such-dir", "x"),
        "rel-exists": "../../outside/secret.txt",
        "rel-missing": "../../outside/no-such-file",
        "rel-climb-missing": "../../../../../../../../no-such-top/x",
        "via-dir-missing": "../link-out-dir/no-such-file",
        "in-abs-missing": os.path.join(os.path.realpath(srv.root.path), "no-such-file"),
        "in-rel-missing": "../no-such-file",
        "in-abs-ok": os.path.join(os.path.realpath(srv.root.path), "hello.txt"),
        "in-via-parent": "../../root/hello.txt",
        "out-back-exists": "../../outside/../root/hello.txt",
        "out-back-missing-dir": "../../outside/no-such-dir/../../root/hello.txt",
        "out-back-through-file": "../../outside/secret.txt/../../root/hello.txt",
    }
    for name, target in links.items():
        os.symlink(target, os.path.join(d, name))
    return d


def check_planted_links(server):
    forbidden, missing = "HTTP/1.1 403 Forbidden", "HTTP/1.1 404 Not Found"
    for name in ("abs-exists", "abs-missing", "abs-missing-dir", "rel-exists", "rel-missing",
                 "rel-climb-missing", "via-dir-missing", "out-back-exists", "out-back-missing-dir",
                 "out-back-through-file"):
        r = server.get("/planted/" + name)
        eq(r.status_line, forbidden, "link out of the root: " + name)
        no_secret(r)
    # names missing inside the root stay 404, also past a file and a link
    for target in ("/planted/in-abs-missing", "/planted/in-rel-missing", "/planted/no-such-link",
                   "/hello.txt/x", "/planted/in-abs-ok/x", "/no-such-dir/x"):
        eq(server.get(target).status_line, missing, "missing inside the root: " + target)
    eq(server.get("/link-out-dir/no-such-file").status_line, forbidden, "through a directory link out")
    # through the root's own parent and back is not leaving it
    for name in ("in-abs-ok", "in-via-parent"):
        r = server.get("/planted/" + name)
        eq(r.status_line, "HTTP/1.1 200 OK", "link into the root: " + name)
        eq(r.body, HELLO, "link into the root: " + name)


@test("path: a symlink out of the root is 403 whether or not its target exists",
      args=["--cache-entries", "0"])
def _(srv):
    d = planted_links(srv)
    try:
        check_planted_links(srv)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    srv.assert_alive()


@test("path: without openat2 (and without /proc) a symlink out of the root is 403 whether or not its target exists")
def _(srv):
    d = planted_links(srv)
    mark = cowdtest.fault_mark(srv.root.tmp, "openat2-refused")
    try:
        listing = cowdtest.build_has("--listing")     # not in a minimal build
        for no_proc in ("0", "1"):
            own = faulty_server(srv, ["--cache-entries", "0"] + (["--listing"] if listing else []),
                                FAULT_OPENAT2_ENOSYS="1", FAULT_OPENAT2_MARK=mark, FAULT_NO_PROC_FD=no_proc)
            try:
                check_planted_links(own)
                # (its worker has served: it has said what it could not open)
                check(("/proc/self/fd: No such file" in own.stderr()) == (no_proc == "1"),
                      "the /proc/self/fd warning with FAULT_NO_PROC_FD=%s: %r" % (no_proc, own.stderr()[-300:]))
                # a listing shows the links into the root, none of those out
                page = own.get("/planted/").body.decode() if listing else ""
                for name in ("in-abs-ok", "in-via-parent") if listing else ():
                    check('href="' + name + '"' in page, "%s not listed (no /proc: %s)" % (name, no_proc))
                for name in ("abs-exists", "rel-exists", "out-back-exists") if listing else ():
                    check(name not in page, "%s listed (no /proc: %s)" % (name, no_proc))
                own.assert_alive()
            finally:
                own.kill()
        if os.path.getsize(mark) == 0:
            raise TestSkip("this build never calls openat2: the test before covered the by-name path")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@test("path: symlink out of the root is followed with --symlinks-outside-root",
      args=["--symlinks-outside-root"])
def _(srv):
    r = srv.get("/link-out.txt")
    eq(r.status_line, "HTTP/1.1 200 OK", "status")
    eq(r.body, SECRET, "body")
    eq(srv.get("/link-out-dir/secret.txt").body, SECRET, "through a directory link")
    # ".." is still refused: only symlinks may leave
    eq(srv.get("/../outside/secret.txt").status_line, BAD, "dot-dot with the option")


@test("path: symlinks inside the root are served (relative and absolute)")
def _(srv):
    r = srv.get("/link-in.txt")
    eq(r.status_line, "HTTP/1.1 200 OK", "relative")
    eq(r.body, HELLO, "relative body")
    r = srv.get("/link-in-abs.txt")
    eq(r.status_line, "HTTP/1.1 200 OK", "absolute link into the root")
    eq(r.body, DIGITS, "absolute body")


# The check of a path through an absolute symbolic link (which openat2
# refuses, so the name is resolved and compared) kept 12 KB of names on the
# handler's stack: with --stack-size 16k, the least, the request ran past
# the stack's end over the heap beneath, unseen; once handler stacks had a
# guard page, the worker died of SIGSEGV on it.
@test("path: an absolute symlink inside the root is served with --stack-size 16k (the least)",
      args=["--stack-size", "16k", "--cache-entries", "0"])
def _(srv):
    for i in range(3):
        r = srv.get("/link-in-abs.txt")
        eq(r.status_line, "HTTP/1.1 200 OK", "absolute link into the root, request %d" % i)
        eq(r.body, DIGITS, "body")
    eq(srv.get("/hello.txt").body, HELLO, "served after them")
    srv.assert_alive()

@test("path: FIFO is 403 quickly")
def _(srv):
    t0 = time.time()
    with srv.conn(timeout=3) as c:
        c.send(request("GET", "/fifo"))
        r = c.response()
    eq(r.status_line, "HTTP/1.1 403 Forbidden", "status")
    check(time.time() - t0 < 2, "FIFO took %.1fs" % (time.time() - t0))
    srv.assert_alive()


def open_watch(path):
    """An inotify descriptor (non-blocking) that reports every open of path."""
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "inotify_init1"):
        raise TestSkip("no inotify here (not Linux)")
    ifd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    if ifd < 0:
        raise TestSkip("no inotify here")
    if libc.inotify_add_watch(ifd, os.fsencode(path), IN_OPEN) < 0:
        os.close(ifd)
        raise TestSkip("cannot watch %s: errno %d" % (path, ctypes.get_errno()))
    return ifd


def opens_seen(ifd):
    try:
        return len(os.read(ifd, 65536))
    except BlockingIOError:
        return 0


@test("path: a FIFO is refused without being opened (a blocked writer is not let go)")
def _(srv):
    srv.root.write("fifo-index/keep.txt", b"keep\n")
    os.mkfifo(os.path.join(srv.root.path, "fifo-index", "index.html"))
    for target, name, want in (("/fifo", "fifo", "403 Forbidden"),
                               ("/fifo/", "fifo", "404 Not Found"),
                               ("/fifo-index/", "fifo-index/index.html", "403 Forbidden")):
        ifd = open_watch(os.path.join(srv.root.path, name))
        try:
            r = srv.get(target)
            eq(r.status_line, "HTTP/1.1 " + want, target)
            # any open of the file came before the response and its event
            # is queued by now: nothing to wait for
            eq(opens_seen(ifd), 0, "bytes of inotify events for opens of %s" % name)
        finally:
            os.close(ifd)
    srv.assert_alive()


def request_while(srv, target, step, seconds, most, stop=lambda r: False):
    """Requests target again and again, for up to seconds and most requests
    or until stop(response) is true, while a forked process calls step(i)
    for i = 1, 2, ... as fast as it can.  Returns {status: count}."""
    pid = os.fork()
    if pid == 0:
        try:
            end = time.time() + seconds + 1
            i = 1
            while time.time() < end:
                step(i)
                i += 1
        finally:
            os._exit(0)
    statuses = {}
    try:
        end = time.time() + seconds
        n = 0
        while time.time() < end and n < most:
            r = srv.get(target)
            statuses[r.status] = statuses.get(r.status, 0) + 1
            n += 1
            if stop(r):
                break
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return statuses


@test("path: a FIFO renamed over a file while it is being served is never opened",
      args=["--cache-entries", "0"])
def _(srv):
    # A process renames a FIFO and a regular file over one name in turn, as
    # fast as it can, while the file is requested again and again: the type
    # looked at must be the type of the file then opened, or the FIFO gets
    # opened (and a writer blocked on it let go) now and then.
    d = os.path.join(srv.root.path, "swap")
    srv.root.write("swap/regular", b"regular\n")
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    os.link(os.path.join(d, "regular"), os.path.join(d, "target"))
    ifd = open_watch(fifo)
    def swap(i):                # the target is the regular file at first
        os.link(fifo if i & 1 else os.path.join(d, "regular"), os.path.join(d, "next"))
        os.rename(os.path.join(d, "next"), os.path.join(d, "target"))
    opened = [0]
    def opened_yet(r):
        opened[0] += opens_seen(ifd)
        return opened[0] > 0
    try:
        statuses = request_while(srv, "/swap/target", swap, 2.0, 4000, opened_yet)
        opened = opened[0] + opens_seen(ifd)
    finally:
        os.close(ifd)
    eq(opened, 0, "bytes of inotify events for opens of the FIFO (statuses %r)" % statuses)
    check(statuses.get(200, 0) > 0 and statuses.get(403, 0) > 0,
          "both the file and the FIFO must have been met to test anything: %r" % statuses)
    eq(sorted(statuses), [200, 403], "statuses")
    srv.assert_alive()


@test("path: unreadable file is 403")
def _(srv):
    if os.geteuid() == 0 and all(u == 0 for u in srv.serving_uids()):
        r = srv.get("/sec/secret.txt")
        check(r.status in (200, 403), "unexpected %s" % r.status_line)   # root reads everything
        raise TestSkip("the server runs as root: EACCES cannot happen")
    r = srv.get("/sec/secret.txt")
    eq(r.status_line, "HTTP/1.1 403 Forbidden", "status")
    check(b"unreadable" not in r.body, "content of an unreadable file served")


@test("path: a symbolic link switched while it is resolved never serves a file outside the root",
      args=["--cache-entries", "0"])
def _(srv):
    # An absolute link (which openat2 refuses even when it leads inside, so
    # the open falls back to openat and a realpath check) is switched
    # between a file outside the root and one inside, as fast as a process
    # can, while it is requested again and again.  Opened while it pointed
    # out and checked once it pointed in, the outside file must not pass.
    d = os.path.join(srv.root.path, "flip")
    os.mkdir(d)
    inside = os.path.join(os.path.realpath(srv.root.path), "hello.txt")
    outside = os.path.join(srv.root.outside, "secret.txt")
    os.symlink(inside, os.path.join(d, "target"))
    def flip(i):
        os.symlink(outside if i & 1 else inside, os.path.join(d, "next"))
        os.rename(os.path.join(d, "next"), os.path.join(d, "target"))
    leaked = [0]
    def leak(r):
        leaked[0] += SECRET in r.body
        return leaked[0] > 0
    statuses = request_while(srv, "/flip/target", flip, 3.0, 6000, leak)
    leaked = leaked[0]
    eq(leaked, 0, "responses with the outside file's content (statuses %r)" % statuses)
    check(statuses.get(200, 0) > 0 and statuses.get(403, 0) > 0,
          "both targets must have been met to test anything: %r" % statuses)
    eq(sorted(statuses), [200, 403], "statuses")
    srv.assert_alive()


@test("path: a link whose target climbs with '..' is served while names are renamed elsewhere",
      args=["--cache-entries", "0"])
def _(srv):
    # The kernel cannot vouch for a ".." met while anything on the system is
    # renamed (openat2 says EAGAIN); that is no reason to refuse the file.
    os.mkdir(os.path.join(srv.root.path, "climb"))
    os.symlink("../hello.txt", os.path.join(srv.root.path, "climb", "up.txt"))
    scratch = os.path.join(srv.root.tmp, "renames")
    os.mkdir(scratch)
    with open(os.path.join(scratch, "a"), "wb"):
        pass
    a, b = os.path.join(scratch, "a"), os.path.join(scratch, "b")
    bodies = set()
    def unexpected(r):
        bodies.add(r.body)
        return r.status != 200
    statuses = request_while(srv, "/climb/up.txt",
                             lambda i: os.rename(a, b) if i & 1 else os.rename(b, a),
                             3.0, 6000, unexpected)
    eq(sorted(statuses), [200], "statuses of %d requests" % sum(statuses.values()))
    eq(bodies, {HELLO}, "bodies")
    srv.assert_alive()


def search_only_dir(srv, name, files):
    """A directory of mode 0711 (names can be looked up in it, not listed);
    skips the test when the server reads everything as root."""
    for rel, data in files.items():
        srv.root.write(name + "/" + rel, data)
    os.chmod(os.path.join(srv.root.path, name), 0o711)
    if os.geteuid() == 0 and all(u == 0 for u in srv.serving_uids()):
        raise TestSkip("the server runs as root: a directory's mode does not stop it")


@test("path: a search-only directory (mode 0711) serves its index and redirects to it")
def _(srv):
    search_only_dir(srv, "so", {"index.html": b"search-only index\n", "a.txt": b"a\n"})
    r = srv.get("/so/")
    eq(r.status_line, "HTTP/1.1 200 OK", "/so/")
    eq(r.body, b"search-only index\n", "/so/ body")
    r = srv.get("/so")
    eq(r.status_line, "HTTP/1.1 301 Moved Permanently", "/so")
    eq(r.get("Location"), "/so/", "Location")
    eq(srv.get("/so/a.txt").body, b"a\n", "a file in it")
    srv.assert_alive()


@test("path: a search-only directory without an index is not listed (403)", args=["--listing"])
def _(srv):
    search_only_dir(srv, "sonoidx", {"b.txt": b"b\n"})
    r = srv.get("/sonoidx/")
    eq(r.status_line, "HTTP/1.1 403 Forbidden", "/sonoidx/")
    check(b"b.txt" not in r.body, "names of a directory that cannot be read were listed")
    # the conditions apply only to a listing that could be sent (RFC 9110 §13.2.1)
    for cond in ('If-None-Match: *', 'If-Match: "x"'):
        eq(srv.get("/sonoidx/", [cond]).status_line, "HTTP/1.1 403 Forbidden", "/sonoidx/ with " + cond)
    eq(srv.get("/sonoidx/b.txt").body, b"b\n", "a file in it")
    eq(srv.get("/noindex/").status, 200, "a readable directory is still listed")
    srv.assert_alive()


@test("path: a listing the directory cannot be opened or read for is an error, not a partial 200",
      args=["--listing"])
def _(srv):
    # Before: readdir()'s NULL was taken for the end, so an I/O error part way
    # sent the names read so far as a whole listing (200, nothing logged); and
    # any failure to open the directory was 403, out of descriptors too.
    names = ["n%02d.txt" % i for i in range(12)]
    for n in names:
        srv.root.write("faulty/" + n, b"x\n")
    own = faulty_server(srv, ["--listing"], FAULT_FDOPENDIR_ERRNO=str(errno.EMFILE),
                        FAULT_READDIR_AT="5")
    try:
        r = own.get("/faulty/")
        eq(r.status_line, "HTTP/1.1 503 Service Unavailable",
           "listing when the directory cannot be opened for want of descriptors")
        eq(r.get("Retry-After"), "1", "Retry-After of the 503")
        r = own.get("/faulty/")
        eq(r.status_line, "HTTP/1.1 500 Internal Server Error", "listing cut short by an I/O error")
        check(b"n0" not in r.body, "names of a listing cut short were sent: %r" % r.body[:300])
        r = own.get("/faulty/")
        eq(r.status, 200, "the next listing")
        for n in names:
            check(n.encode() in r.body, "%s missing from the next listing" % n)
        log = own.stderr()
        check("listing /faulty" in log and "Input/output error" in log,
              "the read error is not logged: %r" % log[-500:])
        own.assert_alive()
    finally:
        own.kill()


# A body read with pread that failed (EIO) closed the connection at once:
# the replies pipelined before it, still in the output buffer, were lost,
# and with more requests unread the close was a reset.  Now, as when the
# file shrank, what is pending leaves first and the FIN follows it.
@test("path: a body that cannot be read (EIO) ends the connection after the replies before it")
def _(srv):
    srv.root.write("eio.bin", bytes(range(256)) * 400)      # above --sendfile-min: by descriptor
    own = faulty_server(srv, [], FAULT_PREAD_OFFSET="50000")
    try:
        with own.conn() as c:
            more = request("GET", "/hello.txt", ["X-Pad: " + "p" * 1000]) * 64
            c.send(request("GET", "/hello.txt") +
                   request("GET", "/eio.bin", ["Range: bytes=50000-50099"]) + more)
            time.sleep(0.5 * SLOW)
            c.sock.settimeout(5 * SLOW)
            try:
                raw = cowdtest.read_to_eof(c.sock)
            except ConnectionResetError:
                raise cowdtest.TestFailure("reset: a reset may erase replies the client has not read yet")
        check(raw.startswith(b"HTTP/1.1 200 OK") and raw.count(b"HTTP/1.1 200 OK") == 1 and
              HELLO in raw, "the first reply, whole, before the close: %r" % raw[:300])
        check(b"HTTP/1.1 206 Partial Content" in raw and b"Content-Length: 100\r\n" in raw,
              "then the head of the range that cannot be finished: %r" % raw[:400])
        log = own.stderr()
        check("eio.bin" in log and "Input/output error" in log, "logged: %r" % log[-500:])
        r = own.get("/eio.bin", ["Range: bytes=60000-60099"])
        eq(r.body, (bytes(range(256)) * 400)[60000:60100], "another range of the file")
        own.assert_alive()
    finally:
        own.kill()


@test("path: trailing slash on a file is 404")
def _(srv):
    eq(srv.get("/hello.txt/").status_line, "HTTP/1.1 404 Not Found", "/hello.txt/")
    eq(srv.get("/hello.txt/x").status_line, "HTTP/1.1 404 Not Found", "/hello.txt/x")


@test("path: missing file is 404")
def _(srv):
    eq(srv.get("/no/such/file").status_line, "HTTP/1.1 404 Not Found", "status")


@test("path: a name longer than the file system allows is 404, not 414")
def _(srv):
    # the URI is within --max-uri; no file can have a 4000-byte name (NAME_MAX
    # 255), so it does not exist: 404, as nginx says.  414 would tell the
    # client to shorten a URI the server accepted.
    for target in ("/" + "a" * 4000, "/" + "a" * 256, "/dir/" + "b" * 300 + "/x"):
        eq(srv.get(target).status_line, "HTTP/1.1 404 Not Found", "GET of a %d-byte path" % len(target))
    srv.assert_alive()


LONG_INDEX = "i" * 250


@test("path: a long --index with a short --max-uri", args=["--max-uri", "64", "--index", LONG_INDEX])
def _(srv):
    # Before: the room left for the index name was computed in size_t and
    # wrapped, and the name was copied past the end of the path buffer (a
    # heap overflow the sanitizer build reports).
    srv.root.write("d" * 40 + "/" + LONG_INDEX, b"long index\n")
    eq(srv.get("/" + "d" * 40 + "/").body, b"long index\n", "the long index file")
    eq(srv.get("/").status_line, "HTTP/1.1 403 Forbidden", "a directory without it")
    eq(srv.get("/" + "e" * 50).status_line, "HTTP/1.1 404 Not Found", "a path near --max-uri")
    srv.assert_alive()


@test("path: long path redirect for a directory", args=["--max-uri", "200"])
def _(srv):
    srv.root.write("d" * 100 + "/index.html", b"deep\n")
    r = srv.get("/" + "d" * 100 + "?" + "q" * 50)
    eq(r.status_line, "HTTP/1.1 301 Moved Permanently", "status")
    eq(r.get("Location"), "/" + "d" * 100 + "/?" + "q" * 50, "Location")
    eq(srv.get("/" + "d" * 100 + "/").body, b"deep\n", "index")


def make_release(base, rel, hello, only, mode=0o755):
    os.makedirs(os.path.join(base, rel))
    for name, data in (("hello.txt", hello), (only, b"only\n"), ("index.html", INDEX)):
        with open(os.path.join(base, rel, name), "wb") as f:
            f.write(data)
    os.chmod(os.path.join(base, rel), mode)


def switch_root(current, rel):
    """ln -sfn rel current.tmp && mv -T current.tmp current"""
    os.symlink(rel, current + ".tmp")
    os.replace(current + ".tmp", current)


@test("path: a --root symlink switched to a new release is served within --cache-validate")
def _(srv):
    # The deploy pattern "current -> rel1", switched atomically to rel2
    # (ln -sfn rel2 current.tmp && mv -T current.tmp current): nginx resolves
    # the root per request; cowd must notice within --cache-validate (1 s)
    # without a SIGHUP, and serve nothing cached from the old release.
    base = os.path.join(srv.root.tmp, "deploy")
    make_release(base, "rel1", b"release one\n", "only1.txt")
    make_release(base, "rel2", b"release two\n", "only2.txt")
    current = os.path.join(base, "current")
    os.symlink("rel1", current)
    own = Server(srv.root, ["--workers", "2"], root_dir=current)
    own.start()
    try:
        for _ in range(4):          # both workers, cached
            eq(own.get("/hello.txt").body, b"release one\n", "before the switch")
            eq(own.get("/only1.txt").status, 200, "a file only in rel1, before the switch")
        switch_root(current, "rel2")
        switched = time.time()
        deadline = switched + 3.0
        while True:
            body, status = own.get("/hello.txt").body, own.get("/only1.txt").status
            if body == b"release two\n" and status == 404:
                break
            check(time.time() < deadline, "3 s after the switch: hello.txt %r, only1.txt %d" % (body, status))
            time.sleep(0.1)
        # every worker has looked again once a whole interval has passed
        time.sleep(max(0.0, switched + 1.1 - time.time()))
        for _ in range(10):
            eq(own.get("/hello.txt").body, b"release two\n", "after the switch")
            eq(own.get("/only1.txt").status, 404, "a file only in rel1, after the switch")
            eq(own.get("/only2.txt").status, 200, "a file only in rel2, after the switch")
        check(re.search(r"cowd\[\d+\] error:", own.stderr()) is None, "errors logged: %r" % own.stderr()[-500:])
        own.assert_alive()
    finally:
        own.kill()


# The switched root was opened for reading after the workers had dropped
# root: a release of mode 0711 (served at start) was refused, and one they
# could read but not search was switched to, then every request was 403.
@test("path: a --root switched to a 0711 release is served; to one the workers cannot search, is not")
def _(srv):
    if os.geteuid() != 0:
        raise TestSkip("needs root (the workers drop to nobody)")
    base = os.path.join(srv.root.tmp, "deploy-modes")
    make_release(base, "search-only", b"search only\n", "only1.txt", 0o711)
    make_release(base, "no-search", b"no search\n", "only2.txt", 0o744)
    current = os.path.join(base, "current")
    os.symlink("search-only", current)
    own = Server(srv.root, ["--workers", "1", "--user", "nobody"], root_dir=current)
    own.start()
    try:
        eq(own.get("/hello.txt").body, b"search only\n", "a 0711 root at start")
        switch_root(current, "no-search")
        time.sleep(1.5)
        for _ in range(3):
            eq(own.get("/hello.txt").body, b"search only\n", "after a switch to a root nobody cannot search")
        check("cannot search it" in own.stderr(), "no error logged: %r" % own.stderr()[-500:])
        switch_root(current, "search-only")
        os.rename(os.path.join(base, "search-only"), os.path.join(base, "search-only-2"))
        make_release(base, "search-only", b"search only, two\n", "only3.txt", 0o711)
        time.sleep(1.5)
        eq(own.get("/hello.txt").body, b"search only, two\n", "after a switch to another 0711 release")
        eq(own.get("/only3.txt").status, 200, "a file only in the new release")
    finally:
        own.kill()
