"""Static GET/HEAD: types, validators, conditionals, ranges, directories, listings."""

import email.utils
import errno
import re
import os
import socket
import time

import cowdtest
from cowdtest import (DATA, DIGITS, DIR_INDEX, DIR_OTHER, HELLO, INDEX, NUMBERED, ROOT_OTHER, WEIRD, WEIRD_NAME,
                      Server, TestFailure, TestSkip, check, eq, read_to_eof, request,
                      test)

OK = "HTTP/1.1 200 OK"
PARTIAL = "HTTP/1.1 206 Partial Content"


def http_date(t):
    return email.utils.formatdate(t, usegmt=True)


def validators(srv, path):
    """path's ETag and Last-Modified, once it changed long enough ago to have them."""
    srv.root.settle(path[1:])
    r = srv.get(path)
    eq(r.status_line, OK, "GET " + path)
    check(r.get("ETag") is not None and r.get("Last-Modified") is not None,
          "validators of %s: %r" % (path, r.raw_head))
    return r.get("ETag"), r.get("Last-Modified")


@test("static: GET headers: Content-Type, Content-Length, Last-Modified, strong ETag")
def _(srv):
    for path, body, ctype in (("/hello.txt", HELLO, "text/plain"), ("/data.bin", DATA, "application/octet-stream"),
                              ("/index.html", INDEX, "text/html"), ("/style.css", None, "text/css")):
        r = srv.get(path)
        eq(r.status_line, OK, path)
        ct = r.get("Content-Type")
        check(ct is not None and ct.split(";")[0].strip() == ctype, "%s Content-Type %r, want %s" % (path, ct, ctype))
        if body is not None:
            eq(r.body, body, path + " body")
        eq(r.get("Content-Length"), str(len(r.body)), path + " Content-Length")
        st = srv.root.stat(path[1:])
        eq(r.get("Last-Modified"), http_date(int(st.st_mtime)), path + " Last-Modified")
        et = r.get("ETag")
        check(et is not None and re.match(r'^"[!#-~]+"$', et), "%s: ETag %r not a strong quoted tag" % (path, et))
        eq(r.get("Accept-Ranges"), "bytes", "Accept-Ranges")


@test("static: empty file is 200 with Content-Length 0")
def _(srv):
    r = srv.get("/empty.txt")
    eq(r.status_line, OK, "status")
    eq(r.get("Content-Length"), "0", "Content-Length")
    eq(r.body, b"", "body")


@test("static: unknown extension and no extension get a default type")
def _(srv):
    srv.root.write("noext", b"noext\n")
    srv.root.write("x.unknownext", b"unk\n")
    for p in ("/noext", "/x.unknownext"):
        r = srv.get(p)
        eq(r.status, 200, p)
        # not sniffed, not text/html (a type a browser would render)
        eq(r.get("Content-Type"), "application/octet-stream", "%s Content-Type" % p)


@test("static: HEAD has the same headers as GET and no body")
def _(srv):
    for path in ("/hello.txt", "/data.bin", "/", "/dir/", "/nope"):
        g = srv.get(path)
        with srv.conn() as c:
            c.send(request("HEAD", path) + request("GET", "/n0.txt"))
            h = c.response("HEAD")
            nxt = c.response()
        eq(h.status_line, g.status_line, "HEAD status " + path)
        strip = lambda r: [(k.lower(), v) for k, v in r.headers if k.lower() != "date"]  # noqa: E731
        eq(strip(h), strip(g), "HEAD headers " + path)
        eq(nxt.status, 200, "no body sent after HEAD " + path)
        eq(nxt.body, NUMBERED[0], "no body bytes leaked after HEAD " + path)


@test("cond: If-None-Match matching is 304 with ETag and no body")
def _(srv):
    et, lm = validators(srv, "/hello.txt")
    for inm in (et, '"x", ' + et, "W/" + et):
        with srv.conn() as c:
            c.send(request("GET", "/hello.txt", ["If-None-Match: " + inm]) + request("GET", "/n0.txt"))
            r = c.response()
            eq(r.status_line, "HTTP/1.1 304 Not Modified", "If-None-Match: " + inm)
            eq(r.get("ETag"), et, "304 ETag")
            eq(r.get("Content-Length"), None, "304 Content-Length")
            eq(c.response().status, 200, "next response (no body after 304)")


@test("cond: If-None-Match: * is 304")
def _(srv):
    r = srv.get("/hello.txt", ["If-None-Match: *"])
    eq(r.status_line, "HTTP/1.1 304 Not Modified", "status")


@test("cond: non-matching If-None-Match is 200")
def _(srv):
    r = srv.get("/hello.txt", ['If-None-Match: "nope"'])
    eq(r.status_line, OK, "status")
    eq(r.body, HELLO, "body")


@test("cond: If-None-Match takes precedence over If-Modified-Since")
def _(srv):
    et, lm = validators(srv, "/hello.txt")
    # alone, this If-Modified-Since is a 304: with a non-matching
    # If-None-Match it must not be looked at (RFC 9110 §13.1.3)
    eq(srv.get("/hello.txt", ["If-Modified-Since: " + lm]).status, 304, "IMS = Last-Modified alone")
    r = srv.get("/hello.txt", ['If-None-Match: "nope"', "If-Modified-Since: " + lm])
    eq(r.status_line, OK, "non-matching INM + IMS = Last-Modified")
    eq(r.body, HELLO, "body")


@test("cond: If-Modified-Since equal to Last-Modified is 304, older 200, invalid 200")
def _(srv):
    et, lm = validators(srv, "/hello.txt")
    r = srv.get("/hello.txt", ["If-Modified-Since: " + lm])
    eq(r.status_line, "HTTP/1.1 304 Not Modified", "IMS = Last-Modified")
    eq(r.get("Last-Modified"), lm, "304 Last-Modified")
    eq(r.get("ETag"), et, "304 ETag")
    st = srv.root.stat("hello.txt")
    r = srv.get("/hello.txt", ["If-Modified-Since: " + http_date(st.st_mtime - 3600)])
    eq(r.status_line, OK, "IMS older")
    eq(r.body, HELLO, "body")
    # invalid forms of the one date that would give 304: a server that
    # took any of them would answer 304
    for bad in ("yesterday", "", lm[:-4], lm.replace("GMT", "UTC"), lm + " x", lm[5:],
                lm.replace(lm[5:7], "32", 1)):
        r = srv.get("/hello.txt", ["If-Modified-Since: " + bad])
        eq(r.status_line, OK, "IMS invalid %r" % bad)


# tmpfs and btrfs keep any mtime (ext4 clamps to 1901), and a tar archive
# may carry one: a file dated before year 1 was sent with an empty
# Last-Modified, which is no HTTP-date (RFC 9110 §8.8.2).
@test("cond: a file dated before year 1 gets Last-Modified Mon, 01 Jan 0001, cached or not")
def _(srv):
    import shutil
    import tempfile
    if not os.path.isdir("/dev/shm"):
        raise TestSkip("no /dev/shm (tmpfs) for a file dated before year 1")
    d = tempfile.mkdtemp(prefix="cowd-year0-", dir="/dev/shm")
    own = None
    try:
        os.chmod(d, 0o755)
        path = os.path.join(d, "old.txt")
        with open(path, "wb") as f:
            f.write(HELLO)
        os.chmod(path, 0o644)
        os.utime(path, ns=(0, -62135596801 * 10**9))
        if os.stat(path).st_mtime > -62135596800:
            raise TestSkip("/dev/shm clamps an mtime before year 1")
        cowdtest.settle_file(path)
        own = Server(srv.root, [], root_dir=d)
        own.start()
        for attempt in range(3):        # a miss, then from the cache
            r = own.get("/old.txt")
            eq(r.status_line, OK, "status (request %d)" % attempt)
            eq(r.get("Last-Modified"), "Mon, 01 Jan 0001 00:00:00 GMT", "Last-Modified (request %d)" % attempt)
        r = own.get("/old.txt", ["If-Modified-Since: Mon, 01 Jan 0001 00:00:00 GMT"])
        eq(r.status_line, "HTTP/1.1 304 Not Modified", "If-Modified-Since that date")
        eq(r.get("Last-Modified"), "Mon, 01 Jan 0001 00:00:00 GMT", "304 Last-Modified")
        check(own.health() is None, "server unhealthy: %s" % own.health())
    finally:
        if own is not None:
            own.kill()
        shutil.rmtree(d, ignore_errors=True)


@test("cond: If-Modified-Since in obsolete formats (RFC 850, asctime)")
def _(srv):
    st = srv.root.stat("hello.txt")
    t = time.gmtime(st.st_mtime)     # not later: a date after now is ignored
    for fmt in ("%A, %d-%b-%y %H:%M:%S GMT", "%a %b %e %H:%M:%S %Y"):
        v = time.strftime(fmt, t)
        r = srv.get("/hello.txt", ["If-Modified-Since: " + v])
        eq(r.status_line, "HTTP/1.1 304 Not Modified", "IMS %r" % v)


@test("cond: an RFC 850 date's two-digit year is read from the clock (RFC 9110 5.6.7)")
def _(srv):
    # A two-digit year up to 50 years ahead is in this century; one more than
    # 50 years ahead is in the last.  A fixed pivot (70-99 -> 19xx) once put
    # a date 49 years ahead 51 years back and answered 412.
    year = time.gmtime().tm_year
    for ahead, want in ((49, OK), (51, "HTTP/1.1 412 Precondition Failed")):
        v = "Friday, 01-Jan-%02d 00:00:00 GMT" % ((year + ahead) % 100)
        r = srv.get("/hello.txt", ["If-Unmodified-Since: " + v])
        eq(r.status_line, want, "If-Unmodified-Since %r" % v)


@test("cond: If-Modified-Since ignored on HEAD? no: HEAD is 304 too")
def _(srv):
    et, lm = validators(srv, "/hello.txt")
    r = srv.req("HEAD", "/hello.txt", ["If-Modified-Since: " + lm])
    eq(r.status_line, "HTTP/1.1 304 Not Modified", "HEAD IMS")


@test("cond: If-Match non-matching is 412, matching 200")
def _(srv):
    et, lm = validators(srv, "/hello.txt")
    r = srv.get("/hello.txt", ['If-Match: "nope"'])
    eq(r.status_line, "HTTP/1.1 412 Precondition Failed", "If-Match non-matching")
    r = srv.get("/hello.txt", ["If-Match: W/" + et])
    eq(r.status_line, "HTTP/1.1 412 Precondition Failed", "If-Match weak (strong comparison)")
    r = srv.get("/hello.txt", ["If-Match: " + et])
    eq(r.status_line, OK, "If-Match matching")
    r = srv.get("/hello.txt", ["If-Match: *"])
    eq(r.status_line, OK, "If-Match *")
    srv.assert_alive()


@test("cond: If-Unmodified-Since older than mtime is 412")
def _(srv):
    st = srv.root.stat("hello.txt")
    r = srv.get("/hello.txt", ["If-Unmodified-Since: " + http_date(st.st_mtime - 3600)])
    eq(r.status_line, "HTTP/1.1 412 Precondition Failed", "IUS older")
    r = srv.get("/hello.txt", ["If-Unmodified-Since: " + http_date(st.st_mtime + 3600)])
    eq(r.status_line, OK, "IUS newer")


def parse_http_date(v):
    return email.utils.parsedate_to_datetime(v).timestamp()


def future_file(srv, name):
    srv.root.write(name, b"from the future\n")
    t = time.time() + 86400 * 365 * 4
    os.utime(os.path.join(srv.root.path, name), (t, t))
    srv.root.settle(name)


def check_future_file(srv, name):
    """RFC 9110 8.8.2.1: Last-Modified never later than Date, and the file's
    own (future) date sent back is ignored, not answered 304 until then."""
    r = srv.get("/" + name)
    eq(r.status_line, OK, name)
    lm, date = r.get("Last-Modified"), r.get("Date")
    check(lm is not None and parse_http_date(lm) <= parse_http_date(date),
          "%s: Last-Modified %r later than Date %r" % (name, lm, date))
    st = srv.root.stat(name)
    r = srv.get("/" + name, ["If-Modified-Since: " + http_date(st.st_mtime)])
    eq(r.status_line, OK, name + ": If-Modified-Since after now is ignored")


@test("cond: a file modified in the future has Last-Modified no later than Date (cached)")
def _(srv):
    future_file(srv, "future.txt")
    check_future_file(srv, "future.txt")
    # cached: the date sent validates while the entry lives
    lm = srv.get("/future.txt").get("Last-Modified")
    eq(srv.get("/future.txt", ["If-Modified-Since: " + lm]).status_line, "HTTP/1.1 304 Not Modified",
       "If-Modified-Since with the cached Last-Modified")


@test("cond: a file modified in the future has Last-Modified no later than Date (uncached)",
      ["--cache-entries", "0"])
def _(srv):
    future_file(srv, "future2.txt")
    check_future_file(srv, "future2.txt")


@test("cond: a client's If-Modified-Since in the future is ignored")
def _(srv):
    r = srv.get("/hello.txt", ["If-Modified-Since: " + http_date(time.time() + 86400 * 365)])
    eq(r.status_line, OK, "If-Modified-Since a year ahead")
    eq(r.body, HELLO, "body")


@test("cond: If-Match and If-None-Match on several lines are one list (RFC 9110 5.3)")
def _(srv):
    et, lm = validators(srv, "/hello.txt")
    cases = (
        (['If-Match: "x"', "If-Match: " + et], OK),
        (['If-Match: "x"', 'If-Match: "y"'], "HTTP/1.1 412 Precondition Failed"),
        (['If-None-Match: "x"', "If-None-Match: " + et], "HTTP/1.1 304 Not Modified"),
        (['If-None-Match: "x"', 'If-None-Match: "y"'], OK),
        # single-valued: two lines make one invalid value, which is ignored
        (["If-Modified-Since: " + lm, "If-Modified-Since: " + lm], OK),
        # either line alone is a 412: a server keeping the first or the last fails
        (["If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT",
          "If-Unmodified-Since: Mon, 07 Nov 1994 08:49:37 GMT"], OK),
    )
    for headers, want in cases:
        eq(srv.get("/hello.txt", headers).status_line, want, " + ".join(headers))


@test("range: Range on two lines is ignored (200), If-Range on two lines never matches")
def _(srv):
    et, _ = validators(srv, "/data.bin")
    r = srv.get("/data.bin", ["Range: bytes=0-9", "Range: bytes=20-29"])
    eq(r.status_line, OK, "two Range lines")
    eq(r.body, DATA, "whole body")
    r = srv.get("/data.bin", ["Range: bytes=0-9", "If-Range: " + et])
    eq(r.status_line, PARTIAL, "one If-Range line")
    r = srv.get("/data.bin", ["Range: bytes=0-9", "If-Range: " + et, "If-Range: " + et])
    eq(r.status_line, OK, "two If-Range lines")


@test("cond: ETag changes when the file changes", ["--cache-validate", "0"])
def _(srv):
    srv.root.write("changing.txt", b"one\n")
    et1, _ = validators(srv, "/changing.txt")
    time.sleep(0.01)
    srv.root.write("changing.txt", b"two!\n")
    srv.root.settle("changing.txt")
    r = srv.get("/changing.txt", ["If-None-Match: " + et1])
    eq(r.status_line, OK, "old ETag no longer matches")
    eq(r.body, b"two!\n", "new content")
    check(r.get("ETag") != et1, "ETag changed")


FIXED_MTIME_NS = 1700000000 * 10**9


def write_dated(path, body, in_place=False):
    """Writes body to path (in_place: over its bytes, the same inode) and
    dates it FIXED_MTIME_NS."""
    with open(path, "r+b" if in_place else "wb") as f:
        f.write(body)
    os.utime(path, ns=(FIXED_MTIME_NS, FIXED_MTIME_NS))


def check_new_etag(srv, target, et1, lm1, body, what):
    """The old ETag no longer matches target, now holding body with the same time."""
    srv.root.settle(target[1:])
    r = srv.get(target, ["If-None-Match: " + et1])
    eq(r.status_line, OK, "the old ETag after the " + what)
    eq(r.body, body, "the new content")
    check(r.get("ETag") != et1, "the ETag did not change: %s" % et1)
    eq(r.get("Last-Modified"), lm1, "Last-Modified (the same time)")
    return r


# The ETag was size and modification time only: a file replaced by another of
# the same size and mtime to the nanosecond (a reproducible build, tar's whole
# seconds) kept its tag, so If-None-Match got 304 and the old content stayed
# in caches (RFC 9110 §8.8.1: a strong tag changes with the content).
@test("cond: a file replaced by one of the same size and mtime gets a new ETag", ["--cache-validate", "0"])
def _(srv):
    path = os.path.join(srv.root.path, "replaced.txt")
    write_dated(path, b"AAAA\n")
    et1, lm1 = validators(srv, "/replaced.txt")
    write_dated(path + ".new", b"BBBB\n")
    os.rename(path + ".new", path)
    check_new_etag(srv, "/replaced.txt", et1, lm1, b"BBBB\n", "replacement")


# The ETag was inode, modification time and size: a file rewritten in place
# (the same inode) with the same size and its modification time set back
# (cp -p or tar over it, a reproducible build's fixed times) kept its tag, so
# If-None-Match got 304 and clients kept the old content.
@test("cond: a file rewritten in place with the same size and mtime gets a new ETag", ["--cache-validate", "0"])
def _(srv):
    path = os.path.join(srv.root.path, "rewritten.txt")
    write_dated(path, b"AAAA\n")
    before = os.stat(path)
    et1, lm1 = validators(srv, "/rewritten.txt")
    time.sleep(0.05)        # past a clock tick: coarse change times too
    write_dated(path, b"BBBB\n", in_place=True)
    st = os.stat(path)
    eq((st.st_ino, st.st_size, st.st_mtime_ns), (before.st_ino, 5, FIXED_MTIME_NS), "the same inode, size and mtime")
    if st.st_ctime_ns == before.st_ctime_ns:
        raise TestSkip("this file system's change time did not move in 50 ms")
    r = check_new_etag(srv, "/rewritten.txt", et1, lm1, b"BBBB\n", "rewrite")
    r = srv.get("/rewritten.txt", ["If-None-Match: " + r.get("ETag")])
    eq(r.status_line, "HTTP/1.1 304 Not Modified", "the new ETag")


@test("cache: a changed file is served within --cache-validate seconds")
def _(srv):
    srv.root.write("cached.txt", b"first version\n")
    r = srv.get("/cached.txt")
    eq(r.body, b"first version\n", "first body")
    srv.root.write("cached.txt", b"second, longer version\n")
    r = srv.get("/cached.txt")
    # within the second the cached snapshot may still be served, but always
    # whole and consistent with its own Content-Length
    check(r.body in (b"first version\n", b"second, longer version\n"), "consistent body")
    eq(r.get("Content-Length"), str(len(r.body)), "length matches body")
    time.sleep(1.2)
    r = srv.get("/cached.txt")
    eq(r.body, b"second, longer version\n", "new body after revalidation")


# Linux sets a write's times before it copies the data, so a copy read
# while another process rewrote a small file in place could be torn with the
# stats before and after it agreeing: the torn copy was then served, with a
# strong ETag, until the file changed again or was evicted.  The shim tears
# the cache's one read of the file as such a write would.
@test("cache: a copy taken just after a change is read again once the change is 3 s old")
def _(srv):
    body = b"a copy that a write in progress could tear\n" * 20
    own = cowdtest.faulty_server(srv, ["--cache-validate", "60"],
                                 FAULT_PREAD_SCRAMBLE_SIZE=str(len(body)))
    try:
        srv.root.write("racy.txt", body)    # changed just now: the copy may be torn
        first = own.get("/racy.txt")
        eq(first.status, 200, "status")
        if first.body != b"#" * len(body):
            raise cowdtest.TestSkip("the shim did not reach the cache's copy (no cache here?)")
        # with the whole file's tag, a client would get 304 for the torn copy for good
        eq((first.get("ETag"), first.get("Last-Modified")), (None, None), "validators of the torn copy")
        changed = os.stat(os.path.join(srv.root.path, "racy.txt")).st_ctime
        while True:
            r = own.get("/racy.txt")
            eq(r.status, 200, "status")
            if r.body == body:
                break
            check(r.body == first.body, "whole copies only: %r" % r.body[:60])
            check(time.time() - changed < 6.0 * cowdtest.SLOW,
                  "still the torn copy %.1f s after the change (--cache-validate 60)" %
                  (time.time() - changed))
            time.sleep(0.2)
    finally:
        own.kill()


# A file changed within the last 2-3 s may be in the middle of a write
# (Linux sets a write's times before it copies the data; a coarse clock gives
# two rewrites in one tick the same times): it was sent with the tag and date
# the finished file has, so a client holding torn or superseded bytes was
# told 304 for them for good.  Such a reply now carries neither.
def would_be_etag(st):
    """The ETag cowd gives a file of this stat (filecache_make_etag)."""
    return '"%x-%x.%x-%x"' % (st.st_ino, st.st_ctime_ns // 10**9, st.st_ctime_ns % 10**9, st.st_size)


def check_fresh_file_has_no_validators(srv):
    small = b"just written\n" * 10
    big = cowdtest.pattern(256 * 1024, 3)       # above --sendfile-min: sent from the descriptor
    for name, body in (("fresh-small.txt", small), ("fresh-big.bin", big)):
        srv.root.write(name, body)
        st = srv.root.stat(name)
        tag = would_be_etag(st)
        old_date = http_date(st.st_mtime - 3600)
        for method, what, headers, status, want in (
                ("GET", "GET", [], 200, body),
                ("HEAD", "HEAD", [], 200, b""),
                ("GET", "a range", ["Range: bytes=0-9"], 206, body[:10]),
                ("GET", "two ranges", ["Range: bytes=0-1,4-5"], 206, None),
                # the tag it will have once settled: no match while it may be torn
                ("GET", "If-None-Match with its tag", ["If-None-Match: " + tag], 200, body),
                ("GET", "If-Range with its tag", ["Range: bytes=0-9", "If-Range: " + tag], 200, body),
                ("GET", "If-None-Match: *", ["If-None-Match: *"], 304, b""),
                ("GET", "If-Modified-Since now", ["If-Modified-Since: " + http_date(time.time())], 200, body),
                # a date still fails a precondition: 412 needs no validator
                ("GET", "If-Unmodified-Since an hour before",
                 ["Range: bytes=0-9", "If-Unmodified-Since: " + old_date], 412, None)):
            r = srv.req(method, "/" + name, headers)
            if time.time() >= int(st.st_ctime) + 2:
                raise TestSkip("a reply came 2 s or more after the write (a loaded machine)")
            eq(r.status, status, "%s: %s just after a write" % (name, what))
            if want is not None:
                eq(r.body, want, "%s: %s body" % (name, what))
            eq((r.get("ETag"), r.get("Last-Modified")), (None, None), "%s: %s validators" % (name, what))
    for name in ("fresh-small.txt", "fresh-big.bin"):
        et, lm = validators(srv, "/" + name)
        eq(et, would_be_etag(srv.root.stat(name)), name + " ETag once settled")
        r = srv.get("/" + name, ["If-None-Match: " + et])
        eq(r.status_line, "HTTP/1.1 304 Not Modified", name + " revalidated by its tag once settled")
        eq(r.get("ETag"), et, name + " the 304's ETag")


@test("cond: a file changed within the last 2-3 s is sent without ETag or Last-Modified, then with them")
def _(srv):
    check_fresh_file_has_no_validators(srv)


@test("cond: uncached, a file changed within the last 2-3 s is sent without ETag or Last-Modified",
      ["--cache-entries", "0"])
def _(srv):
    check_fresh_file_has_no_validators(srv)


# sendfile refusing a file (EINVAL: a file system that cannot splice) was
# taken for a dead client: the head left, the connection was closed and
# nothing logged, on every request for the file.  The bytes go by pread
# and write instead.
@test("static: a file sendfile refuses (EINVAL) is sent by read and write instead")
def _(srv):
    own = cowdtest.faulty_server(srv, ["--sendfile-min", "16k"], FAULT_SENDFILE_ERRNO=str(errno.EINVAL))
    try:
        blk = srv.root.big_block
        with own.conn() as c:
            c.send(b"GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n"
                   b"GET /big.bin HTTP/1.1\r\nHost: a\r\nRange: bytes=1000000-1300000\r\n\r\n"
                   b"GET /hello.txt HTTP/1.1\r\nHost: a\r\n\r\n")
            r = c.response()
            eq(r.status_line, OK, "status")
            eq(len(r.body), cowdtest.BIG_SIZE, "body length")
            check(r.body == blk * (cowdtest.BIG_SIZE // len(blk)), "body bytes differ")
            r = c.response()
            eq(r.status_line, PARTIAL, "range status")
            want = (blk * 2)[1000000 % len(blk):1000000 % len(blk) + 300001]
            check(r.body == want, "range bytes differ")
            eq(c.response().body, HELLO, "the pipelined request after them")
    finally:
        own.kill()

# sendfile failing for the file's sake (EOVERFLOW: an offset it cannot
# send; ENOMEM: no memory for the pages) ended the connection after the
# head without a word in the error log.
@test("static: sendfile failing on the file (EOVERFLOW) closes the connection and logs why")
def _(srv):
    own = cowdtest.faulty_server(srv, ["--sendfile-min", "16k"], FAULT_SENDFILE_ERRNO=str(errno.EOVERFLOW))
    try:
        with own.conn() as c:
            c.send(b"GET /big.bin HTTP/1.1\r\nHost: a\r\n\r\n")
            raw = c.read_to_eof()
        check(raw.startswith(b"HTTP/1.1 200 OK\r\n"), "the head went out: %r" % raw[:60])
        check(len(raw) < cowdtest.BIG_SIZE, "closed before the whole body (%d bytes)" % len(raw))
        want = "sending the body of /big.bin: " + os.strerror(errno.EOVERFLOW)
        deadline = time.time() + 5
        while want not in own.stderr() and time.time() < deadline:
            time.sleep(0.05)
        check(want in own.stderr(), "no %r in the error log: %r" % (want, own.stderr()[-500:]))
        eq(own.get("/hello.txt").body, HELLO, "the next client")
        own.assert_alive()
    finally:
        own.kill()


@test("cache: a file truncated under the cache is never served with a wrong length",
      ["--cache-validate", "0", "--sendfile-min", "1k"])
def _(srv):
    srv.root.write("shrink.bin", b"x" * 100000)
    r = srv.get("/shrink.bin")
    eq(len(r.body), 100000, "full body")
    srv.root.write("shrink.bin", b"y" * 10)
    r = srv.get("/shrink.bin")
    eq(r.get("Content-Length"), "10", "new length")
    eq(r.body, b"y" * 10, "new body")


@test("cache: a file that shrinks within --cache-validate fails one connection, not every one",
      ["--cache-validate", "60", "--sendfile-min", "1k"])
def _(srv):
    srv.root.write("shrink2.bin", b"x" * 100000)
    eq(len(srv.get("/shrink2.bin").body), 100000, "full body")
    srv.root.write("shrink2.bin", b"y" * 10)          # same inode, truncated in place
    with srv.conn() as c:
        c.send(request("GET", "/shrink2.bin"))
        raw = c.read_to_eof()           # the 100000 bytes promised cannot come: closed
    head, _, body = raw.partition(b"\r\n\r\n")
    check(b"Content-Length: 100000" in head and len(body) < 100000,
          "the connection that found the file short: %r, %d body bytes" % (head[:200], len(body)))
    r = srv.get("/shrink2.bin")
    eq(r.status_line, OK, "next request")
    eq(r.get("Content-Length"), "10", "next request's length")
    eq(r.body, b"y" * 10, "next request's body")
    check("shrank while being sent" in srv.stderr(), "logged: %r" % srv.stderr()[-300:])


@test("cache: a file that shrinks under its reply ends the connection with a FIN, not a reset: "
      "the replies before it still reach a client that pipelined more",
      ["--cache-validate", "60", "--sendfile-min", "1k"])
def _(srv):
    srv.root.write("shrink3.bin", b"x" * 100000)
    eq(len(srv.get("/shrink3.bin").body), 100000, "full body")
    srv.root.write("shrink3.bin", b"y" * 10)          # same inode, truncated in place
    with srv.conn() as c:
        # more pipelined requests than cowd reads at once: some are still
        # unread in its kernel when it gives up on the shrunk file
        more = request("GET", "/hello.txt", ["X-Pad: " + "p" * 1000]) * 64
        c.send(request("GET", "/hello.txt") + request("GET", "/shrink3.bin") + more)
        time.sleep(0.5)                 # everything cowd sends waits unread in our kernel
        c.sock.settimeout(5)
        try:
            raw = read_to_eof(c.sock)
        except ConnectionResetError:
            raise TestFailure("reset: a reset may erase replies the client has not read yet")
    eq(raw[:raw.index(b"\r\n")], OK.encode(), "first reply's status line")
    check(raw.count(b"HTTP/1.1 200 OK") == 2 and b"Content-Length: 100000" in raw,
          "the first reply whole, then the head of the one that cannot be finished: %r" % raw[:400])
    eq(srv.get("/hello.txt").status_line, OK, "served afterwards")


@test("cache: a small range of a file that shrank under the cache ends the connection "
      "after the replies pipelined before it", ["--cache-validate", "60"])
def _(srv):
    # a range below --sendfile-min is read into memory, not sent with sendfile
    srv.root.write("shrink4.bin", b"x" * 100000)
    eq(len(srv.get("/shrink4.bin").body), 100000, "full body")
    srv.root.write("shrink4.bin", b"y" * 10)          # same inode, truncated in place
    with srv.conn() as c:
        c.send(request("GET", "/hello.txt") +
               request("GET", "/shrink4.bin", ["Range: bytes=50000-50099"]))
        c.sock.settimeout(5)
        raw = read_to_eof(c.sock)
    check(raw.startswith(OK.encode()) and raw.count(b"HTTP/1.1 200 OK") == 1,
          "the first reply, whole, before the close: %r" % raw[:300])
    check(b"HTTP/1.1 206 Partial Content" in raw and b"Content-Length: 100\r\n" in raw,
          "then the head of the range that cannot be finished: %r" % raw[:400])
    check("shrank while being sent" in srv.stderr(), "logged: %r" % srv.stderr()[-300:])
    eq(srv.get("/hello.txt").status_line, OK, "served afterwards")


@test("cache: a file replaced by rename is noticed", ["--cache-validate", "0"])
def _(srv):
    srv.root.write("swap.txt", b"AAAA")
    eq(srv.get("/swap.txt").body, b"AAAA", "before")
    srv.root.write("swap.tmp", b"BBBB")
    os.rename(os.path.join(srv.root.path, "swap.tmp"), os.path.join(srv.root.path, "swap.txt"))
    eq(srv.get("/swap.txt").body, b"BBBB", "after rename")


# ---- ranges -----------------------------------------------------------------

def rng(srv, path, spec, extra=()):
    return srv.get(path, ["Range: " + spec] + list(extra))


@test("range: bytes=0-9 is 206 with exact Content-Range")
def _(srv):
    r = rng(srv, "/data.bin", "bytes=0-9")
    eq(r.status_line, PARTIAL, "status")
    eq(r.get("Content-Range"), "bytes 0-9/1000", "Content-Range")
    eq(r.get("Content-Length"), "10", "Content-Length")
    eq(r.body, DATA[0:10], "body")
    eq(r.get("Content-Type"), "application/octet-stream", "Content-Type")
    check(r.get("ETag") and r.get("Last-Modified"), "validators on 206")


@test("range: suffix bytes=-5")
def _(srv):
    r = rng(srv, "/data.bin", "bytes=-5")
    eq(r.status_line, PARTIAL, "status")
    eq(r.get("Content-Range"), "bytes 995-999/1000", "Content-Range")
    eq(r.body, DATA[-5:], "body")
    r = rng(srv, "/data.bin", "bytes=-5000")
    eq(r.status_line, PARTIAL, "suffix longer than file")
    eq(r.get("Content-Range"), "bytes 0-999/1000", "Content-Range")
    eq(r.body, DATA, "body")


@test("range: open bytes=10-")
def _(srv):
    r = rng(srv, "/data.bin", "bytes=10-")
    eq(r.status_line, PARTIAL, "status")
    eq(r.get("Content-Range"), "bytes 10-999/1000", "Content-Range")
    eq(r.body, DATA[10:], "body")


@test("range: last-pos beyond the end is clipped")
def _(srv):
    r = rng(srv, "/data.bin", "bytes=990-5000")
    eq(r.status_line, PARTIAL, "status")
    eq(r.get("Content-Range"), "bytes 990-999/1000", "Content-Range")
    eq(r.body, DATA[990:], "body")
    r = rng(srv, "/data.bin", "bytes=999-999")
    eq(r.get("Content-Range"), "bytes 999-999/1000", "last byte")
    eq(r.body, DATA[999:], "last byte body")


def parse_multipart(r, size):
    ct = r.get("Content-Type")
    m = re.match(r"^multipart/byteranges; boundary=([0-9A-Za-z'()+_,.:=?-]{1,70})$", ct or "")
    check(m, "Content-Type %r" % ct)
    b = m.group(1).encode()
    body = r.body
    eq(r.get("Content-Length"), str(len(body)), "multipart Content-Length vs body")
    check(body.endswith(b"\r\n--" + b + b"--\r\n"), "multipart close delimiter: %r" % body[-60:])
    body = body[:-len(b"\r\n--" + b + b"--\r\n")]
    check(body.startswith(b"\r\n--" + b + b"\r\n") or body.startswith(b"--" + b + b"\r\n"),
          "first delimiter %r" % body[:60])
    if body.startswith(b"\r\n"):
        body = body[2:]
    chunks = body.split(b"\r\n--" + b + b"\r\n")
    chunks[0] = chunks[0][len(b"--" + b + b"\r\n"):]
    parts = []
    for ch in chunks:
        head, _, data = ch.partition(b"\r\n\r\n")
        hdrs = {}
        for ln in head.decode("latin-1").split("\r\n"):
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        parts.append((hdrs, data))
    return parts


@test("range: two ranges give an exact multipart/byteranges")
def _(srv):
    r = rng(srv, "/data.bin", "bytes=0-9, 500-519")
    eq(r.status_line, PARTIAL, "status")
    eq(r.get("Content-Range"), None, "no top-level Content-Range")
    parts = parse_multipart(r, 1000)
    eq(len(parts), 2, "part count")
    for (h, d), (a, z) in zip(parts, ((0, 9), (500, 519))):
        eq(h.get("content-type"), "application/octet-stream", "part Content-Type")
        eq(h.get("content-range"), "bytes %d-%d/1000" % (a, z), "part Content-Range")
        eq(sorted(h), ["content-range", "content-type"], "part headers")
        eq(d, DATA[a:z + 1], "part bytes %d-%d" % (a, z))


@test("range: multipart with suffix, open and clipped ranges in request order")
def _(srv):
    r = rng(srv, "/digits.txt", "bytes=90-,-3,5-7,98-200")
    eq(r.status_line, PARTIAL, "status")
    parts = parse_multipart(r, 100)
    want = [(90, 99), (97, 99), (5, 7), (98, 99)]
    eq([p[0].get("content-range") for p in parts], ["bytes %d-%d/100" % w for w in want], "ranges")
    eq([p[1] for p in parts], [DIGITS[a:z + 1] for a, z in want], "bytes")


@test("range: HEAD with two ranges is 200 with plain headers")
def _(srv):
    r = srv.req("HEAD", "/data.bin", ["Range: bytes=0-9,20-29"])
    eq(r.status_line, OK, "status")
    eq(r.get("Content-Length"), "1000", "Content-Length")


@test("range: unsatisfiable bytes=SIZE- is 416 with Content-Range */SIZE")
def _(srv):
    r = rng(srv, "/data.bin", "bytes=1000-")
    eq(r.status_line, "HTTP/1.1 416 Range Not Satisfiable", "status")
    eq(r.get("Content-Range"), "bytes */1000", "Content-Range")
    r = rng(srv, "/data.bin", "bytes=-0")
    eq(r.status_line, "HTTP/1.1 416 Range Not Satisfiable", "bytes=-0")
    srv.assert_alive()


@test("range: invalid Range syntax is ignored (200)")
def _(srv):
    for spec in ("bytes=5-2", "bytes=x-y", "items=0-1", "bytes=", "bytes 0-9", "bytes=0-9;x"):
        r = rng(srv, "/data.bin", spec)
        eq(r.status_line, OK, "Range %r" % spec)
        eq(r.body, DATA, "body for %r" % spec)


@test("range: If-Range with the current ETag is 206, old or weak ETag 200")
def _(srv):
    et, lm = validators(srv, "/data.bin")
    r = rng(srv, "/data.bin", "bytes=0-9", ["If-Range: " + et])
    eq(r.status_line, PARTIAL, "current ETag")
    eq(r.body, DATA[:10], "body")
    for ir in ('"old-etag"', "W/" + et):
        r = rng(srv, "/data.bin", "bytes=0-9", ["If-Range: " + ir])
        eq(r.status_line, OK, "If-Range %s" % ir)
        eq(r.body, DATA, "full body for If-Range %s" % ir)


# An If-Range date equal to Last-Modified was honoured (206) whenever the
# file had not changed in the second of the reply.  But a file's modification
# time can be set back (cp -p, tar, unzip, SOURCE_DATE_EPOCH): a new version
# may carry the old one's, and a download resumed with the date got the new
# version's bytes after the old one's.  A date never matches now: no strong
# validator here (RFC 9110 §8.8.2.2); the whole file is always allowed
# (§13.1.5).
@test("range: If-Range with a date is 200 with the whole file, even a Last-Modified kept by cp -p",
      ["--cache-validate", "0"])
def _(srv):
    path = os.path.join(srv.root.path, "resumed.bin")
    old = DATA
    new = bytes(b ^ 0x55 for b in DATA)     # the same length and time, other bytes
    write_dated(path, old)
    et, lm = validators(srv, "/resumed.bin")
    r = rng(srv, "/resumed.bin", "bytes=0-9", ["If-Range: " + et])
    eq(r.status_line, PARTIAL, "If-Range with the ETag")
    eq(r.body, old[:10], "the range")
    r = rng(srv, "/resumed.bin", "bytes=0-9", ["If-Range: " + lm])
    eq(r.status_line, OK, "If-Range with Last-Modified itself")
    eq(r.body, old, "the whole file")
    write_dated(path + ".new", new)         # a new version, copied with cp -p
    os.rename(path + ".new", path)
    srv.root.settle("resumed.bin")
    r = rng(srv, "/resumed.bin", "bytes=10-", ["If-Range: " + lm])
    eq(r.get("Last-Modified"), lm, "the new version's Last-Modified (the old one's time)")
    eq(r.status_line, OK, "If-Range with the old version's date")
    eq(r.body, new, "the new version, whole")
    r = rng(srv, "/resumed.bin", "bytes=10-", ["If-Range: " + http_date(FIXED_MTIME_NS // 10**9 - 3600)])
    eq(r.status_line, OK, "If-Range with an older date")
    r = rng(srv, "/resumed.bin", "bytes=10-", ["If-Range: " + et])
    eq(r.status_line, OK, "If-Range with the old version's ETag")
    eq(r.body, new, "the new version, whole")


@test("range: more ranges than --max-ranges is 200 full", args=["--max-ranges", "4"])
def _(srv):
    r = rng(srv, "/data.bin", "bytes=0-1,10-11,20-21,30-31,40-41")
    eq(r.status_line, OK, "5 ranges with max 4")
    eq(r.body, DATA, "body")
    r = rng(srv, "/data.bin", "bytes=0-1,10-11,20-21,30-31")
    eq(r.status_line, PARTIAL, "4 ranges with max 4")
    eq(len(parse_multipart(r, 1000)), 4, "parts")


@test("range: heavily overlapping ranges are 200 full")
def _(srv):
    for n in (50, 10):
        r = rng(srv, "/data.bin", "bytes=" + ",".join(["0-"] * n))
        eq(r.status_line, OK, "%d x 0-" % n)
        eq(r.body, DATA, "body")
    r = rng(srv, "/data.bin", "bytes=" + ",".join("%d-999" % (i * 10) for i in range(12)))
    eq(r.status_line, OK, "12 ranges overlapping to 11 times the file")
    eq(r.body, DATA, "body")


@test("range: Range on HEAD is 200 (Range only applies to GET)")
def _(srv):
    r = srv.req("HEAD", "/data.bin", ["Range: bytes=0-9"])
    eq(r.status_line, OK, "status")
    eq(r.get("Content-Length"), "1000", "Content-Length")
    eq(r.get("Content-Range"), None, "Content-Range")


@test("range: Range with If-None-Match matching is 304")
def _(srv):
    et, lm = validators(srv, "/data.bin")
    r = rng(srv, "/data.bin", "bytes=0-9", ["If-None-Match: " + et])
    eq(r.status_line, "HTTP/1.1 304 Not Modified", "status")


@test("range: preconditions are judged before Range (RFC 9110 13.2.2)")
def _(srv):
    et, lm = validators(srv, "/data.bin")
    r = rng(srv, "/data.bin", "bytes=5000-", ['If-Match: "nope"'])
    eq(r.status_line, "HTTP/1.1 412 Precondition Failed", "failing If-Match with an unsatisfiable Range")
    r = rng(srv, "/data.bin", "bytes=5000-", ["If-None-Match: " + et])
    eq(r.status_line, "HTTP/1.1 304 Not Modified", "matching If-None-Match with an unsatisfiable Range")
    r = rng(srv, "/data.bin", "bytes=0-9", ["If-Unmodified-Since: " + lm])
    eq(r.status_line, PARTIAL, "a resumed download: If-Unmodified-Since its Last-Modified")
    eq(r.body, DATA[:10], "body")
    r = rng(srv, "/data.bin", "bytes=0-9", ["If-Match: " + et])
    eq(r.status_line, PARTIAL, "If-Match matching")
    srv.assert_alive()


@test("range: an empty file: a suffix range is 200 empty, any other 416 with */0")
def _(srv):
    r = rng(srv, "/empty.txt", "bytes=-5")
    eq((r.status_line, r.get("Content-Length"), r.body), (OK, "0", b""), "bytes=-5")
    for spec in ("bytes=0-", "bytes=0-0", "bytes=-0"):
        r = rng(srv, "/empty.txt", spec)
        eq(r.status_line, "HTTP/1.1 416 Range Not Satisfiable", spec)
        eq(r.get("Content-Range"), "bytes */0", "Content-Range for %s" % spec)
        eq(r.get("Content-Length"), str(len(r.body)), "Content-Length for %s" % spec)
    srv.assert_alive()


@test("range: multipart read through the uncached path, parts kept apart",
      args=["--cache-entries", "0"])
def _(srv):
    want = ((0, 9), (500, 519), (990, 999))
    r = rng(srv, "/data.bin", "bytes=0-9,500-519,990-999")
    eq(r.status_line, PARTIAL, "status")
    parts = parse_multipart(r, 1000)
    eq([h.get("content-range") for h, _ in parts], ["bytes %d-%d/1000" % w for w in want], "ranges")
    eq([d for _, d in parts], [DATA[a:z + 1] for a, z in want], "bytes of each part")


# ---- directories ---------------------------------------------------------------

@test("dir: /dir is 301 to /dir/ keeping the query")
def _(srv):
    r = srv.get("/dir")
    eq(r.status_line, "HTTP/1.1 301 Moved Permanently", "status")
    eq(r.get("Location"), "/dir/", "Location")
    r = srv.get("/dir?a=1&b=2")
    eq(r.get("Location"), "/dir/?a=1&b=2", "Location with query")
    r = srv.get("/noindex/sub?x")
    eq(r.get("Location"), "/noindex/sub/?x", "nested Location")


@test("dir: redirect Location re-encodes what a URI query cannot hold")
def _(srv):
    for query, want in (('a<b>"c{|}^`\\', "a%3Cb%3E%22c%7B%7C%7D%5E%60%5C"),
                        ("x=%41%zz&y=/?:@!$'()*+,;=~", "x=%41%25zz&y=/?:@!$'()*+,;=~"),
                        ("%", "%25")):
        r = srv.get("/dir?" + query)
        eq(r.status_line, "HTTP/1.1 301 Moved Permanently", query)
        eq(r.get("Location"), "/dir/?" + want, "Location for ?" + query)


@test("dir: a redirect whose Location would pass 64 KiB gets 414, a shorter one 301, whatever --max-uri",
      args=["--max-uri", "1000000", "--max-header-size", "1048576"])
def _(srv):
    # "/dir/?" and the query: 6 + 65,529 bytes fit the 64 KiB, with its NUL
    for qlen, status in ((60000, "301 Moved Permanently"), (65529, "301 Moved Permanently"),
                         (65530, "414 URI Too Long"), (200000, "414 URI Too Long")):
        with srv.conn(timeout=10 * cowdtest.SLOW) as c:
            c.send(request("GET", "/dir?" + "q" * qlen, ["Connection: close"]))
            r = c.response()
        eq(r.status_line, "HTTP/1.1 " + status, "a query of %d bytes" % qlen)
        if status.startswith("301"):
            eq(r.get("Location"), "/dir/?" + "q" * qlen, "Location with a query of %d bytes" % qlen)


@test("dir: redirect Location is the normalized path, never '//host/'")
def _(srv):
    for target, loc in (("//dir", "/dir/"), ("http://x//dir?q", "/dir/?q"), ("//noindex//sub", "/noindex/sub/"),
                        ("/docs/../dir", "/dir/"), ("/%64ir", "/dir/")):
        r = srv.get(target)
        eq(r.status_line, "HTTP/1.1 301 Moved Permanently", target)
        eq(r.get("Location"), loc, "Location for " + target)


@test("dir: redirect Location percent-encodes the directory name")
def _(srv):
    srv.root.write("sp ace&<d>/index.html", b"sp\n")
    r = srv.get("/sp%20ace%26%3Cd%3E")
    eq(r.get("Location"), "/sp%20ace%26%3Cd%3E/", "Location")
    eq(srv.get(r.get("Location")).body, b"sp\n", "following it")


@test("dir: /dir/ and / serve the index file")
def _(srv):
    r = srv.get("/dir/")
    eq(r.status_line, OK, "status")
    eq(r.body, DIR_INDEX, "body")
    check((r.get("Content-Type") or "").startswith("text/html"), "index Content-Type %r" % r.get("Content-Type"))
    r = srv.get("/")
    eq(r.body, INDEX, "root index")
    r = srv.get("/dir/?q=1")
    eq(r.body, DIR_INDEX, "with query")


@test("dir: --index other.html is used", args=["--index", "other.html"])
def _(srv):
    eq(srv.get("/dir/").body, DIR_OTHER, "/dir/")
    eq(srv.get("/").body, ROOT_OTHER, "/")


@test("dir: without index and without --listing is 403")
def _(srv):
    r = srv.get("/noindex/")
    eq(r.status_line, "HTTP/1.1 403 Forbidden", "status")


LISTING_ENTRIES = ["Zeta.txt", WEIRD_NAME, "b.txt", "sub"]    # byte order: 'Z' < 'a' < 'b' < 's'


@test("dir: --listing lists sorted, escaped, without hidden files", args=["--listing"])
def _(srv):
    r = srv.get("/noindex/")
    eq(r.status_line, OK, "status")
    check((r.get("Content-Type") or "").startswith("text/html"), "Content-Type")
    eq(r.get("Content-Length"), str(len(r.body)), "Content-Length")
    html = r.body.decode("utf-8")
    hrefs = re.findall(r'<a href="([^"]*)">([^<]*)</a>', html)
    eq(hrefs, [("../", "../"), ("Zeta.txt", "Zeta.txt"),
               ("a%20file%20%26%20%3Cx%3E.txt", "a file &amp; &lt;x&gt;.txt"),
               ("b.txt", "b.txt"), ("sub/", "sub/")], "entries")
    check(".hidden" not in html, "hidden file listed")
    check("<x>" not in html, "unescaped name in listing")
    # the escaped hrefs lead to the files
    eq(srv.get("/noindex/a%20file%20%26%20%3Cx%3E.txt").body, WEIRD, "following the href")
    eq(srv.get("/noindex/sub/").status, 200, "subdirectory listing")
    # directories with an index still serve it
    eq(srv.get("/dir/").body, DIR_INDEX, "index wins over listing")


# A listing looked at its symbolic links with a stat that followed them
# anywhere: one to a directory outside the root was listed as "x/", telling
# what is there, though a request for it gets 403.
@test("dir: --listing leaves out symbolic links out of the root, keeps those inside", args=["--listing"])
def _(srv):
    d = os.path.join(srv.root.path, "links")
    os.makedirs(d, exist_ok=True)
    os.symlink(srv.root.outside, os.path.join(d, "out-dir"))
    os.symlink("/nonexistent-cowd-target", os.path.join(d, "out-missing"))
    os.symlink("../noindex", os.path.join(d, "in-dir"))
    os.symlink("../hello.txt", os.path.join(d, "in-file"))
    r = srv.get("/links/")
    eq(r.status_line, OK, "status")
    hrefs = [h for h, _ in re.findall(r'<a href="([^"]*)">([^<]*)</a>', r.body.decode("utf-8"))]
    eq(hrefs, ["../", "in-dir/", "in-file"], "entries")
    eq(srv.get("/links/out-dir/").status, 403, "the link out of the root")


# Before: only a link whose target was missing (ENOENT), looping or out of
# the root (EXDEV) was left out; one through a file ("file/x": ENOTDIR) was
# listed, out of the root or not, and so were FIFOs and sockets: each a link
# to a 403 or 404.
@test("dir: --listing leaves out links through a file, FIFOs and sockets", args=["--listing"])
def _(srv):
    d = os.path.join(srv.root.path, "deadends")
    os.makedirs(d, exist_ok=True)
    os.symlink("../hello.txt/x", os.path.join(d, "through-file"))
    os.symlink(os.path.join(srv.root.outside, "secret.txt", "x"), os.path.join(d, "out-through-file"))
    os.mkfifo(os.path.join(d, "fifo"))
    os.symlink("fifo", os.path.join(d, "to-fifo"))
    # what a request can serve stays listed: a file the server may not read
    # is a 403 but found by the same look (no read needed)
    srv.root.write("deadends/locked.txt", b"locked")
    os.chmod(os.path.join(d, "locked.txt"), 0)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(os.path.join(d, "sock"))
        srv.root.write("deadends/ok.txt", b"ok")
        r = srv.get("/deadends/")
        eq(r.status_line, OK, "status")
        hrefs = [h for h, _ in re.findall(r'<a href="([^"]*)">([^<]*)</a>', r.body.decode("utf-8"))]
        eq(hrefs, ["../", "locked.txt", "ok.txt"], "entries")
        for name in ("through-file", "out-through-file", "fifo", "to-fifo", "sock"):
            check(srv.get("/deadends/" + name).status in (403, 404), "a request for %s is refused" % name)
    finally:
        sock.close()


@test("dir: --listing with --symlinks-outside-root lists links out of the root",
      args=["--listing", "--symlinks-outside-root"])
def _(srv):
    d = os.path.join(srv.root.path, "links2")
    os.makedirs(d, exist_ok=True)
    os.symlink(srv.root.outside, os.path.join(d, "out-dir"))
    r = srv.get("/links2/")
    hrefs = [h for h, _ in re.findall(r'<a href="([^"]*)">([^<]*)</a>', r.body.decode("utf-8"))]
    eq(hrefs, ["../", "out-dir/"], "entries")


@test("dir: --listing of a subdirectory links its parent; HEAD has no body", args=["--listing"])
def _(srv):
    srv.root.write("listroot/f.txt", b"f")
    r = srv.get("/listroot/")
    check('href="../"' in r.body.decode(), "parent link in a subdirectory")
    # pipelined: a body sent after the HEAD's head would be read as the
    # next response
    with srv.conn() as c:
        c.send(request("HEAD", "/listroot/") + request("GET", "/hello.txt"))
        h = c.response("HEAD")
        eq(h.status_line, OK, "HEAD listing")
        eq(h.get("Content-Length"), str(len(r.body)), "HEAD Content-Length")
        eq(c.response().body, HELLO, "the response after the HEAD")


# A listing has no ETag and no Last-Modified, but it is a current
# representation: If-Match and If-None-Match still apply (RFC 9110 §13.1.1-2),
# the date conditions are ignored (§13.1.3-4).  They used to be ignored
# altogether: 200 to If-Match: "x" and to If-None-Match: *.
@test("dir: --listing answers If-Match and If-None-Match, and ignores the date conditions",
      args=["--listing"])
def _(srv):
    cases = [
        ("GET", ['If-Match: "x"'], 412), ("HEAD", ['If-Match: "x"'], 412),
        ("GET", ["If-Match: *"], 200),
        ("GET", ["If-None-Match: *"], 304), ("HEAD", ["If-None-Match: *"], 304),
        ("GET", ['If-None-Match: "x", W/"y"'], 200),
        ("GET", ["If-Modified-Since: Sun, 06 Nov 2050 08:49:37 GMT"], 200),
        ("GET", ["If-Modified-Since: %s" % time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime())], 200),
        ("GET", ["If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT"], 200),
    ]
    for method, headers, want in cases:
        r = srv.req(method, "/noindex/", headers)
        eq(r.status, want, "%s with %s" % (method, headers))
        if want == 304:
            eq(r.body, b"", "304 body")
            check(not r.has("Content-Length") or r.get("Content-Length") == "0", "304 Content-Length")
    srv.assert_alive()


# RFC 9110 §15.4.5: a 304 carries the Cache-Control the 200 would have.
# It used to have none, so a cache could store the listing as fresh.
@test("dir: --listing's 304 carries the 200's Cache-Control: no-cache", args=["--listing"])
def _(srv):
    r = srv.get("/noindex/")
    eq(r.status, 200, "listing")
    eq(r.all("Cache-Control"), ["no-cache"], "Cache-Control of the 200")
    for method in ("GET", "HEAD"):
        r = srv.req(method, "/noindex/", ["If-None-Match: *"])
        eq(r.status, 304, "%s with If-None-Match: *" % method)
        eq(r.all("Cache-Control"), ["no-cache"], "Cache-Control of the 304 to %s" % method)
        check(not r.has("ETag") and not r.has("Last-Modified"), "validators on a listing's 304")
    # a file's 304 has no Cache-Control, as its 200 has none
    r = srv.get("/hello.txt")
    check(not r.has("Cache-Control"), "Cache-Control on a file's 200")
    r = srv.get("/hello.txt", ["If-None-Match: " + r.get("ETag")])
    eq(r.status, 304, "file 304")
    check(not r.has("Cache-Control"), "Cache-Control on a file's 304")


@test("dir: --listing escapes the directory name in the title", args=["--listing"])
def _(srv):
    srv.root.write("l<&>d/f.txt", b"f")
    r = srv.get("/l%3C%26%3Ed/")
    eq(r.status_line, OK, "status")
    html = r.body.decode()
    check("l&lt;&amp;&gt;d" in html and "l<&>d" not in html, "title not escaped: %r" % html[:300])


@test("range: ranges of a big file (sendfile path), single and multipart")
def _(srv):
    blk = srv.root.big_block
    big = lambda a, z: bytes(blk[i % len(blk)] for i in range(a, z + 1)) if z - a < 4096 else None  # noqa: E731

    def expect(a, z, data):
        want = (blk * 2)[a % len(blk):a % len(blk) + (z - a + 1)]
        eq(len(data), z - a + 1, "length of %d-%d" % (a, z))
        check(data == want, "bytes %d-%d differ" % (a, z))

    r = srv.get("/big.bin", ["Range: bytes=1000000-1300000"])
    eq(r.status_line, PARTIAL, "status")
    eq(r.get("Content-Range"), "bytes 1000000-1300000/%d" % (20 * 1024 * 1024), "Content-Range")
    expect(1000000, 1300000, r.body)
    r = srv.get("/big.bin", ["Range: bytes=5-200004,3000000-3100000,-70000"])
    eq(r.status_line, PARTIAL, "multipart status")
    parts = parse_multipart(r, 20 * 1024 * 1024)
    size = 20 * 1024 * 1024
    eq(len(parts), 3, "part count")
    for (h, d), (a, z) in zip(parts, ((5, 200004), (3000000, 3100000), (size - 70000, size - 1))):
        eq(h.get("content-range"), "bytes %d-%d/%d" % (a, z, size), "part range")
        expect(a, z, d)
    del big


LONG_NAME = "&" * 251 + ".txt"     # 255 bytes, the longest name; 1259 once escaped


@test("dir: --listing shows long names with many special characters", args=["--listing"])
def _(srv):
    srv.root.write("longnames/" + LONG_NAME, b"long\n")
    srv.root.write("longnames/" + '"' * 255, b"q\n")
    r = srv.get("/longnames/")
    eq(r.status_line, OK, "status")
    html = r.body.decode()
    check("&amp;" * 251 + ".txt</a>" in html, "long &-name not listed: %r" % html[-600:])
    check("&quot;" * 255 + "</a>" in html, 'long "-name not listed')
    check('href="' + "%26" * 251 + '.txt"' in html, "long href")
    check('href="' + "%22" * 255 + '"' in html, "long href")
    eq(srv.get("/longnames/" + "%26" * 251 + ".txt").body, b"long\n", "following the href")


@test("dir: --listing-max shows the first N names in order and says how many more",
      args=["--listing", "--listing-max", "100"])
def _(srv):
    # Before: the cap applied in directory order, before sorting, and the
    # names beyond it were dropped without a word.
    names = ["f%04d.txt" % i for i in range(150)]
    d = os.path.join(srv.root.path, "capped")
    os.mkdir(d)
    for n in reversed(names):
        open(os.path.join(d, n), "wb").close()
    r = srv.get("/capped/")
    eq(r.status_line, OK, "status")
    eq(r.get("Content-Length"), str(len(r.body)), "Content-Length")
    html = r.body.decode()
    hrefs = [h for h, _ in re.findall(r'<a href="([^"]*)">([^<]*)</a>', html) if h != "../"]
    eq(hrefs, names[:100], "the first 100 names, sorted")
    check("50 more entries not listed" in html, "no word of the 50 more: %r" % html[-300:])
    h = srv.req("HEAD", "/capped/")
    eq(h.get("Content-Length"), str(len(r.body)), "HEAD Content-Length")


@test("dir: --listing leaves out names a request could not reach (control bytes)", args=["--listing"])
def _(srv):
    # Before: "a\nb" was listed, and following its link gave 400.
    d = os.path.join(srv.root.path, "ctl")
    os.mkdir(d)
    for n in ("a\nb.txt", "tab\there.txt", "ok.txt"):
        with open(os.path.join(d, n), "wb") as f:
            f.write(b"x")
    r = srv.get("/ctl/")
    hrefs = [h for h, _ in re.findall(r'<a href="([^"]*)">([^<]*)</a>', r.body.decode()) if h != "../"]
    eq(hrefs, ["ok.txt"], "entries")
    for h in hrefs:
        eq(srv.get("/ctl/" + h).status, 200, "following %s" % h)


# Each listing held its names (up to --listing-max of them, about 3 MB of
# long ones) for as long as its reader took: one slow reader per handler
# thread held most of a gigabyte.  All the listings of a worker now hold at
# most --listing-memory; one that would need more gets 503.
@test("dir: a listing past --listing-memory gets 503 while the memory is held, 200 once freed",
      args=["--listing", "--listing-memory", "300k"])
def _(srv):
    d = os.path.join(srv.root.path, "memlist")
    os.makedirs(d, exist_ok=True)
    for i in range(2000):               # about 240 KB of names and entries: one fits, two do not
        open(os.path.join(d, "%s%04d" % ("m" * 100, i)), "wb").close()
    held = socket.socket()
    held.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    held.settimeout(10)
    try:
        held.connect(("127.0.0.1", srv.port))
        held.sendall(request("GET", "/memlist/"))
        head = held.recv(1024)
        check(head.startswith(b"HTTP/1.1 200 "), "the first listing: %r" % head[:40])
        # its page (about 470 KB) cannot all go out to a reader that does not read
        r = srv.get("/memlist/")
        eq(r.status_line, "HTTP/1.1 503 Service Unavailable", "a second listing while the first holds its names")
        eq(r.get("Retry-After"), "1", "Retry-After")
        eq(srv.get("/noindex/").status_line, OK, "a small listing still fits")
        eq(srv.get("/hello.txt").status_line, OK, "a file")
    finally:
        held.close()
    deadline = time.time() + 10 * cowdtest.SLOW
    while True:                          # the first listing's handler sees the close, frees its names
        r = srv.get("/memlist/")
        if r.status == 200 or time.time() > deadline:
            break
        time.sleep(0.1)
    eq(r.status_line, OK, "the listing once the first reader is gone")
    eq(r.body.count(b"<li><a href=\"mmm"), 2000, "entries")
    log = srv.stderr()
    eq(log.count("listing /memlist refused with 503"), 1, "lines about the refusals in %r" % log[-600:])


@test("dir: slow readers of a big listing do not each hold the page in memory",
      args=["--listing", "--threads", "64", "--listing-memory", "64m"])
def _(srv):
    # Before: the whole page was built in memory and held until sent: 40
    # slow readers of a 16 MB page took the worker to 450 MB.  The names
    # are still held while a listing is sent (about 2 MB here: they must be
    # sorted); the page, 8 times larger with names that escape, is not.
    pid = cowdtest.worker_to_measure(srv)
    d = os.path.join(srv.root.path, "biglist")
    os.mkdir(d)
    stem = "&" * 200
    for i in range(10000):
        open(os.path.join(d, "%s%05d" % (stem, i)), "wb").close()
    first = srv.get("/biglist/")
    eq(first.status_line, OK, "status")
    size = len(first.body)
    check(size > 4 * 1024 * 1024, "page of %d bytes" % size)
    def rss_kb():
        return cowdtest.proc_status(pid, "VmRSS")
    before = rss_kb()
    readers = []
    try:
        for _ in range(20):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(10)
            s.connect(("127.0.0.1", srv.port))
            s.sendall(request("GET", "/biglist/"))
            s.recv(1024)
            readers.append(s)
        time.sleep(0.5)
        grew = rss_kb() - before
        check(grew < 20 * size // 1024 // 4, "worker RSS grew %d KB with 20 slow readers of a %d KB page"
              % (grew, size // 1024))
    finally:
        for s in readers:
            s.close()
    srv.assert_alive()


# The table was sized from the file's bytes (half as many extensions as
# bytes, twice that many slots): a mime.types of 12 MiB, nearly all
# comments, cost each process 384 MiB for one entry.  It now grows with
# the extensions it holds.
@test("static: the --mime-types table grows with its entries, not with the file's comments")
def _(srv):
    entry = "text/x-cowd-test cowdtest\n"
    small = os.path.join(srv.root.tmp, "small.types")
    commented = os.path.join(srv.root.tmp, "commented.types")
    with open(small, "w") as f:
        f.write(entry)
    with open(commented, "w") as f:
        f.write(entry)
        comment = "# " + "x" * 1021 + "\n"
        for _ in range(12 * 1024):
            f.write(comment)
    os.chmod(small, 0o644)
    os.chmod(commented, 0o644)
    srv.root.write("f.cowdtest", b"typed\n")
    size_kb = {}
    for path in (small, commented):
        own = Server(srv.root, ["--mime-types", path])
        own.start()
        try:
            r = own.get("/f.cowdtest")
            eq(r.status_line, "HTTP/1.1 200 OK", "status with " + path)
            eq(r.get("content-type"), "text/x-cowd-test", "type from " + path)
            size_kb[path] = cowdtest.proc_status((own.children() or [own.proc.pid])[0], "VmSize")
            own.assert_alive()
        finally:
            own.kill()
    grew = size_kb[commented] - size_kb[small]
    # the 12 MiB text itself is kept (the type strings point into it)
    check(grew < 64 * 1024, "a worker's address space grew %d KB for 12 MiB of comments" % grew)


@test("range: a long media type from --mime-types never cuts a multipart part header")
def _(srv):
    mt = os.path.join(srv.root.tmp, "long.types")
    long_ok = "application/x-" + "a" * 113             # a 127-character subtype: accepted
    too_long = "application/x-" + "b" * 200            # refused with a warning
    with open(mt, "w") as f:
        f.write("%s lok\n%s lbad\ntext/plain txt\ntext/x-long extensionof16chars\n" % (long_ok, too_long))
    os.chmod(mt, 0o644)
    srv.root.write("f.lok", DATA)
    srv.root.write("f.lbad", DATA)
    own = Server(srv.root, ["--mime-types", mt])
    own.start()
    try:
        check("entry skipped: its type is not type/subtype" in own.stderr(), "no warning for the over-long type: %r" % own.stderr()[-500:])
        # before, an extension too long for the table was dropped without a word
        check('extension "extensionof16chars" skipped: longer than 15 characters' in own.stderr(),
              "no warning for the over-long extension: %r" % own.stderr()[-500:])
        for path, ctype in (("/f.lok", long_ok), ("/f.lbad", "application/octet-stream")):
            r = rng(own, path, "bytes=0-0,10-10")
            eq(r.status_line, PARTIAL, path)
            parts = parse_multipart(r, len(DATA))
            eq(len(parts), 2, path + " part count")
            for (h, d), a in zip(parts, (0, 10)):
                eq(h.get("content-type"), ctype, path + " part Content-Type")
                eq(h.get("content-range"), "bytes %d-%d/%d" % (a, a, len(DATA)), path + " part Content-Range")
                eq(d, DATA[a:a + 1], path + " part body")
        own.assert_alive()
    finally:
        own.kill()
