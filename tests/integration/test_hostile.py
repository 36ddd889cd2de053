"""Hostile inputs, table-driven: every row of tests/hostile/cases.tsv is one test.

A row gives the raw request bytes, the exact status line of each response
they must produce (in order), what each response body must be, whether the
connection must then close, and the RFC section (or CVE class) behind it.
The table format is described in tests/hostile/README.md.

Per case this checks: the exact status lines; the bodies named by the table;
that no response header is one cowd never sends (an injected header) and that
no header value carries a NUL; "close" → `Connection: close` on the last
response and the server closes without sending anything more (so nothing
pipelined behind the hostile request was executed); "keep" → the same
connection still serves a normal GET.  The harness then checks that a new
connection is served and that no sanitizer report or crash happened.
"""

import os
import re

from cowdtest import SRCDIR, Closed, TestFailure, check, eq, request, test

HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(SRCDIR or os.path.join(HERE, "..", ".."), "tests", "hostile", "cases.tsv")

# every header cowd may send; anything else in a response was injected
KNOWN_HEADERS = {"date", "server", "connection", "content-type", "content-length", "last-modified",
                 "etag", "accept-ranges", "content-range", "allow", "location"}

COLUMNS = ["id", "category", "request", "expect", "bodies", "connection", "headers", "ref", "note"]

_REPEAT = re.compile(r"\{\{([0-9]+)\*(.*?)\}\}")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|[rnt\\])|\\")


def unescape(s):
    """The table's escaped text -> bytes: \\r \\n \\t \\\\ \\xHH, and {{N*TEXT}}
    for TEXT repeated N times (TEXT itself escaped)."""
    s = _REPEAT.sub(lambda m: m.group(2) * int(m.group(1)), s)

    def one(m):
        e = m.group(1)
        if e is None:
            raise ValueError("unknown escape in %r" % s[:80])
        if e[0] == "x":
            return chr(int(e[1:], 16))
        return {"r": "\r", "n": "\n", "t": "\t", "\\": "\\"}[e]
    return _ESCAPE.sub(one, s).encode("latin-1")


def load_table(path=TABLE):
    cases = []
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if fields[0] == "id":
                if fields != COLUMNS:
                    raise ValueError("%s:%d: columns %r, want %r" % (path, lineno, fields, COLUMNS))
                continue
            if len(fields) != len(COLUMNS):
                raise ValueError("%s:%d: %d fields, want %d" % (path, lineno, len(fields), len(COLUMNS)))
            case = dict(zip(COLUMNS, fields))
            case["data"] = unescape(case["request"])
            case["expects"] = case["expect"].split(" | ")
            case["body_specs"] = case["bodies"].split(" | ")
            if len(case["body_specs"]) != len(case["expects"]):
                raise ValueError("%s:%d: %d bodies for %d responses" % (path, lineno, len(case["body_specs"]),
                                                                       len(case["expects"])))
            if case["connection"] not in ("close", "keep", "any"):
                raise ValueError("%s:%d: connection %r" % (path, lineno, case["connection"]))
            cases.append(case)
    return cases


def check_not_injected(r, case):
    for name, value in r.headers:
        check(name.lower() in KNOWN_HEADERS,
              "%s: response carries header %r (injected?): %r" % (case["id"], name, r.raw_head[:400]))
        check("\x00" not in value, "%s: NUL in response header %s" % (case["id"], name))



def check_body(r, spec, files, what):
    """spec: FILE, the whole file of the test root, or FILE[A:B], those bytes of it."""
    m = re.match(r"^([^\[]+)(?:\[(\d+):(\d+)\])?$", spec)
    want = files[m.group(1)]
    if m.group(2) is not None:
        want = want[int(m.group(2)):int(m.group(3))]
    eq(r.body, want, "%s (%s)" % (what, spec))


def check_parts(r, spec, files, what):
    """spec: FILE:N, a multipart/byteranges body of N parts, each the bytes of
    FILE its Content-Range names, and the closing delimiter last."""
    name, count = spec.rsplit(":", 1)
    ctype = r.get("Content-Type") or ""
    m = re.match(r"^multipart/byteranges; boundary=(\S+)$", ctype)
    check(m is not None, "%s: Content-Type %r" % (what, ctype))
    sep = b"\r\n--" + m.group(1).encode()
    body = r.body
    check(body.startswith(sep[2:]) or body.startswith(sep), "%s: body does not begin with the boundary" % what)
    chunks = (b"\r\n" + body if not body.startswith(b"\r\n") else body).split(sep)
    eq(chunks[0], b"", "%s: bytes before the first boundary" % what)
    eq(chunks[-1], b"--\r\n", "%s: closing delimiter" % what)
    parts = chunks[1:-1]
    eq(len(parts), int(count), "%s: parts" % what)
    data = files[name]
    for k, part in enumerate(parts):
        head, _, got = part.partition(b"\r\n\r\n")
        cr = re.search(rb"\r\nContent-Range: bytes (\d+)-(\d+)/(\d+)", head)
        check(cr is not None, "%s: part %d has no Content-Range: %r" % (what, k + 1, head))
        first, last, total = (int(x) for x in cr.groups())
        eq(total, len(data), "%s: part %d total" % (what, k + 1))
        eq(got, data[first:last + 1], "%s: part %d bytes %d-%d" % (what, k + 1, first, last))


def run_case(srv, case):
    files = srv.root.files
    with srv.conn(timeout=10) as c:
        try:
            c.send(case["data"])
        except (BrokenPipeError, ConnectionResetError):
            pass                    # the server refused early; its answer is still to be read
        r = None
        for i, (want, spec) in enumerate(zip(case["expects"], case["body_specs"])):
            method = "HEAD" if spec == "HEAD" else "GET"
            r = c.response(method)
            eq(r.status_line, want, "%s: response %d status" % (case["id"], i + 1))
            check_not_injected(r, case)
            if spec.startswith("="):
                check_body(r, spec[1:], files, "%s: response %d body" % (case["id"], i + 1))
            elif spec.startswith("parts:"):
                check_parts(r, spec[6:], files, "%s: response %d" % (case["id"], i + 1))
            if i == 0 and case["headers"] != "-":
                for h in case["headers"].split(" | "):
                    name, value = h.split(": ", 1)
                    eq(r.get(name), value, "%s: %s" % (case["id"], name))
        if case["connection"] == "close":
            eq(r.get("Connection"), "close", "%s: Connection on the last response" % case["id"])
            c.expect_closed()
        elif case["connection"] == "keep":
            check(r.get("Connection") != "close", "%s: Connection: close on a kept connection" % case["id"])
            try:
                c.send(request("GET", "/hello.txt"))
                r = c.response()
            except (OSError, Closed) as e:
                raise TestFailure("%s: connection not usable after the case: %s" % (case["id"], e))
            eq(r.status_line, "HTTP/1.1 200 OK", "%s: normal GET on the same connection" % case["id"])
            eq(r.body, files["hello.txt"], "%s: normal GET body" % case["id"])


@test("hostile: the README and tests/hostile/README.md give the table's row count, by category")
def _(srv):
    cases = load_table()
    base = SRCDIR or os.path.join(HERE, "..", "..")
    with open(os.path.join(base, "README"), encoding="utf-8") as f:
        readme = f.read()
    stated = [int(n) for n in re.findall(r"([0-9]+) hostile requests|hostile-input table \(([0-9]+) cases\)",
                                           readme) for n in n if n]
    check(len(stated) == 2, "README states the table's size twice, found %r" % stated)
    for n in stated:
        eq(n, len(cases), "the README's count of hostile cases")
    with open(os.path.join(base, "tests", "hostile", "README.md"), encoding="utf-8") as f:
        hreadme = f.read()
    m = re.search(r"Cases by category \(([0-9]+)\)", hreadme)
    check(m is not None, "tests/hostile/README.md states the total")
    eq(int(m.group(1)), len(cases), "tests/hostile/README.md's total")
    by_category = {}
    for case in cases:
        by_category[case["category"]] = by_category.get(case["category"], 0) + 1
    listed = {c: int(n) for c, n in re.findall(r"^\| ([a-z-]+) \| ([0-9]+) \|", hreadme, re.M)}
    eq(listed, by_category, "tests/hostile/README.md's cases by category")


def _register():
    for case in load_table():
        def t(srv, case=case):
            run_case(srv, case)
        test("hostile: %s" % case["id"])(t)


_register()
