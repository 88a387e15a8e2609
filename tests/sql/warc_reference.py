"""An independent reading of WARC files, for the WARC import's test.

warcio (the Webrecorder/Internet Archive WARC library) reads the records and
undoes the HTTP transfer and content codings; Python's html.parser finds the
links. Each file given is one snapshot. Prints JSON:
{"snapshots": [{"pages": {url: [time, status, digest]}, "links": [[src, dst]]}]}
with URLs as resolved here (the Rust test normalizes both sides the same way).
Exit code 3 if warcio is not installed.
"""

import json
import sys
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

try:
    from warcio.archiveiterator import ArchiveIterator
except ImportError:
    print("warcio is not installed (make test installs it)")
    sys.exit(3)


class Links(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.base = None
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        a = {}
        for k, v in attrs:
            a.setdefault(k, v)
        if tag in ("a", "area") and a.get("href") is not None:
            self.hrefs.append(a["href"])
        elif tag in ("frame", "iframe") and a.get("src") is not None:
            self.hrefs.append(a["src"])
        elif tag == "base" and self.base is None and a.get("href") is not None:
            self.base = a["href"]
        elif tag == "meta" and (a.get("http-equiv") or "").lower() == "refresh":
            content = a.get("content") or ""
            for sep in ";,":
                if sep in content:
                    rest = content.split(sep, 1)[1].strip()
                    if rest[:3].lower() == "url":
                        rest = rest[3:].lstrip()
                        if not rest.startswith("="):
                            break
                        rest = rest[1:].strip()
                    rest = rest.strip("'\"")
                    if rest:
                        self.hrefs.append(rest)
                    break

    handle_startendtag = handle_starttag


def resolve(base, href):
    """urljoin, corrected where it departs from the WHATWG URL standard (which
    browsers and webevo follow): `https:host/path` against an `http` base is
    absolute, and an empty query (`x?`) is kept."""
    scheme = href.split(":", 1)[0].lower() if ":" in href else ""
    if scheme in ("http", "https") and not href[len(scheme) + 1 :].startswith("//"):
        if scheme != urlsplit(base).scheme:
            href = scheme + "://" + href[len(scheme) + 1 :].lstrip("/\\")
    t = urljoin(base, href)
    if href.split("#", 1)[0].endswith("?") and "?" not in t:
        t += "?"
    return t


def http_links(url, html):
    p = Links()
    p.feed(html)
    p.close()
    base = resolve(url, p.base.strip()) if p.base else url
    out = []
    for h in p.hrefs:
        t = resolve(base, h.strip())
        parts = urlsplit(t)
        if parts.scheme in ("http", "https") and parts.hostname:
            out.append(t)
    return out


def read(path, captures):
    pages, links = {}, set()
    with open(path, "rb") as f:
        for rec in ArchiveIterator(f):
            kind = rec.rec_type
            if kind not in ("response", "revisit", "resource"):
                continue
            url = rec.rec_headers.get_header("WARC-Target-URI")
            if not url or urlsplit(url).scheme.lower() not in ("http", "https"):
                continue
            date = rec.rec_headers.get_header("WARC-Date")
            digest = rec.rec_headers.get_header("WARC-Payload-Digest")
            status = None
            if rec.http_headers is not None and kind != "resource":
                status = int(rec.http_headers.get_statuscode())
            found = []
            if kind == "revisit":
                refers = rec.rec_headers.get_header("WARC-Refers-To-Target-URI")
                found = captures.get((url, digest), captures.get((refers, digest), []))
            elif status is not None and 300 <= status < 400:
                loc = rec.http_headers.get_header("Location")
                if loc:
                    t = resolve(url, loc.strip())
                    if urlsplit(t).scheme in ("http", "https"):
                        found = [t]
            else:
                ctype = (
                    rec.http_headers.get_header("Content-Type")
                    if rec.http_headers is not None
                    else rec.rec_headers.get_header("Content-Type")
                ) or ""
                ctype = ctype.split(";")[0].strip().lower()
                ok = status is None or 200 <= status < 300
                if ok and ctype in ("text/html", "application/xhtml+xml"):
                    body = rec.content_stream().read()
                    found = http_links(url, body.decode("utf-8", "replace"))
            if kind != "revisit" and digest:
                captures.setdefault((url, digest), found)
            old = pages.get(url)
            obs = [date, status, digest]
            if old is None or obs[0] >= old[0]:
                pages[url] = obs
            for t in found:
                links.add((url, t))
    return {"pages": pages, "links": sorted(links)}


def main():
    captures = {}
    snaps = [read(p, captures) for p in sys.argv[1:]]
    json.dump({"snapshots": snaps}, sys.stdout)


if __name__ == "__main__":
    main()
