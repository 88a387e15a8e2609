"""Checks a `webevo report` page against DuckDB and against what a browser drew.

    report_check.py REPORT.html [--dom DOM.html] [--screenshot SHOT.png] [--expect ID ...]

1. Every figure's embedded data (its <script class="figure-data"> JSON) equals
   the result of running the figure's own DuckDB query on the output (rows
   compared as multisets, numbers to 1e-9 relative).
2. Every plot has marks in the series colours inside its SVG, every table has
   rows: in REPORT.html, and with --dom in the DOM Chromium built from it
   (`chromium --dump-dom`).
3. With --screenshot, the PNG Chromium took shows series colours.
4. With --expect, each named figure id is present.

Exit code 1 on a failed check, 3 when duckdb is not installed.
"""

import json
import math
import struct
import sys
import zlib
from decimal import Decimal
from html.parser import HTMLParser

try:
    import duckdb
except ImportError:
    print("python package duckdb is not installed (make test installs it)")
    sys.exit(3)

# src/report/plot.rs PALETTE, as plotters writes colours.
PALETTE = [
    (78, 121, 167), (242, 142, 43), (225, 87, 89), (118, 183, 178), (89, 161, 79),
    (237, 201, 72), (176, 122, 161), (255, 157, 167), (156, 117, 95), (186, 176, 172),
]
PALETTE_HEX = {"#%02X%02X%02X" % c for c in PALETTE}


class Page(HTMLParser):
    """Figures with their data blocks, SVG marks and table rows."""

    def __init__(self):
        super().__init__()
        self.figures = {}  # id -> {"kind", "marks", "rows", "data"}
        self.current = None
        self.depth = 0
        self.in_svg = False
        self.in_tbody = False
        self.in_data = False
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure":
            self.current = a.get("id")
            self.figures[self.current] = {
                "kind": a.get("class"), "marks": 0, "rows": 0, "data": None}
            return
        if self.current is None:
            return
        f = self.figures[self.current]
        if tag == "svg":
            self.in_svg = True
        elif self.in_svg and (
            (a.get("fill") or "").upper() in PALETTE_HEX
            or (a.get("stroke") or "").upper() in PALETTE_HEX
        ):
            f["marks"] += 1
        elif tag == "tbody":
            self.in_tbody = True
        elif tag == "tr" and self.in_tbody:
            f["rows"] += 1
        elif tag == "script" and a.get("class") == "figure-data":
            self.in_data = True
            self.text = []

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag == "svg":
            self.in_svg = False
        elif tag == "tbody":
            self.in_tbody = False
        elif tag == "script" and self.in_data:
            self.in_data = False
            self.figures[self.current]["data"] = json.loads("".join(self.text))
        elif tag == "figure":
            self.current = None

    def handle_data(self, data):
        if self.in_data:
            self.text.append(data)


def parse(path):
    p = Page()
    p.feed(open(path, encoding="utf-8").read())
    return p.figures


def norm(v):
    if v is None:
        return (0, "")
    if isinstance(v, bool):
        return (1, float(v))
    if isinstance(v, (int, float, Decimal)):
        x = float(v)
        return (1, float(f"{x:.9g}") if math.isfinite(x) else x)
    return (2, str(v))


def same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == 1:
        return math.isclose(a[1], b[1], rel_tol=1e-8, abs_tol=1e-12)
    return a[1] == b[1]


def check_data(figures, failures):
    con = duckdb.connect()
    con.execute("set timezone = 'UTC'")
    for fid, f in figures.items():
        d = f["data"]
        if d is None:
            failures.append(f"{fid}: no data block")
            continue
        try:
            cur = con.execute(d["query"])
        except duckdb.Error as e:
            failures.append(f"{fid}: its query fails: {e}")
            continue
        cols = [c[0] for c in cur.description]
        got = sorted(tuple(norm(v) for v in row) for row in cur.fetchall())
        want = sorted(tuple(norm(v) for v in row) for row in d["data"]["rows"])
        if cols != d["data"]["columns"]:
            failures.append(f"{fid}: query columns {cols}, data columns {d['data']['columns']}")
            continue
        if len(got) != len(want):
            failures.append(f"{fid}: query returns {len(got)} rows, the figure has {len(want)}")
            continue
        for g, w in zip(got, want):
            if len(g) != len(w) or not all(same(x, y) for x, y in zip(g, w)):
                failures.append(f"{fid}: query row {g} but figure row {w}")
                break
        if not want:
            failures.append(f"{fid}: no data")


def check_marks(figures, where, failures):
    for fid, f in figures.items():
        if f["kind"] == "plot" and f["marks"] == 0:
            failures.append(f"{fid}: no marks in the series colours ({where})")
        if f["kind"] == "table" and f["rows"] == 0:
            failures.append(f"{fid}: an empty table ({where})")


def png_colours(path):
    """The set of RGB colours of an 8-bit RGB or RGBA, non-interlaced PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(len(raw) // (stride + 1)):
        ftype = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = prev[i]
            ul = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + left) & 255
            elif ftype == 2:
                line[i] = (line[i] + up) & 255
            elif ftype == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif ftype == 4:
                p = left + up - ul
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else ul)
                line[i] = (line[i] + pred) & 255
        for x in range(0, stride, bpp):
            colours.add((line[x], line[x + 1], line[x + 2]))
        prev = line
    return colours


def main(argv):
    report = argv[0]
    dom = shot = None
    expect = []
    i = 1
    while i < len(argv):
        if argv[i] == "--dom":
            dom = argv[i + 1]
            i += 2
        elif argv[i] == "--screenshot":
            shot = argv[i + 1]
            i += 2
        elif argv[i] == "--expect":
            expect = argv[i + 1:]
            break
        else:
            raise SystemExit(f"unknown argument {argv[i]}")
    failures = []
    figures = parse(report)
    for fid in expect:
        if fid not in figures:
            failures.append(f"{fid}: not in the report")
    check_data(figures, failures)
    check_marks(figures, "page source", failures)
    if dom:
        drawn = parse(dom)
        if set(drawn) != set(figures):
            failures.append(f"the browser's DOM has figures {sorted(drawn)}, the page {sorted(figures)}")
        check_marks(drawn, "browser DOM", failures)
    if shot:
        seen = png_colours(shot) & set(PALETTE)
        if len(seen) < 3:
            failures.append(f"the screenshot shows {len(seen)} series colours")
    for f in failures:
        print(f)
    marks = sum(f["marks"] for f in figures.values())
    print(f"{len(figures)} figures, {marks} marks, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
