#!/usr/bin/env python3
"""The discovery analysis' two heavy parts as a data engineer would write them in
DuckDB SQL: the SQL peer that `make bench` times webevo against.

    .venv/bin/python benches/discovery_sql.py CRAWL [--json FILE] [--threads N]
        [--check OUT | --run-webevo]

For every snapshot t after the first it computes, from the crawl directory's
Parquet tables (`snapshots/<seq>/pages.parquet`: url, ...; `links.parquet`: src,
dst, ...), with the definitions of docs/discovery.md and sites = hosts:

  old pages   known (fetched, or named by a link) in some snapshot before t
  new pages   fetched at t and known in no snapshot before t
  E_t         links of pages fetched at t, on-site (same host), self-links dropped
  Z_t         the covering pairs (x, y): x old and fetched at t, y new, with a path
              x -> y_1 -> ... -> y in E_t through new pages only (WITH RECURSIVE)
  Jaccard     per site, for every pair of old pages with non-empty N_t(x) (the y of
              Z_t with that x): J = |N(x) ∩ N(y)| / |N(x) ∪ N(y)|, binned into
              floor(20·|∩|/|∪|) (J = 1 in bin 19). The intersections come from a
              self-join of Z_t on y; pairs sharing nothing (bin 0) are C(n, 2) per
              site minus the intersecting pairs.

Output (stdout, or --json FILE): a JSON summary with, per snapshot, the new pages,
the covering pairs |Z_t|, the coverable new pages (distinct y of Z_t) and the 20
histogram bins, and the time of every phase (load; per snapshot closure and
Jaccard).

--check OUT compares the result with webevo's output directory OUT (`cover_summary`:
Σ covering_pairs and Σ (new_pages − orphans) per snapshot; `snapshots`: new_pages;
`jaccard_histogram` when the output has it); --run-webevo first runs
`webevo run --job jobs/discovery.toml` on CRAWL into a temporary directory. A
mismatch exits with status 1. `compare()` and `check()` are what bench.py calls.

URLs are taken as they are: the generator writes normalized URLs, and the host is
the text between "scheme://" (and any "user@") and the next "/", "?", "#" or ":".
All snapshots are assumed full (the generator writes no partial ones).
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import duckdb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# `make build` (Cargo.toml's `dist` profile) unless WEBEVO names another binary
# (`make bench*` name the profile-guided one).
WEBEVO = os.path.abspath(os.environ.get("WEBEVO") or os.path.join(ROOT, "target", "dist", "webevo"))
BINS = 20

HOST_REGEX = r"^[A-Za-z][A-Za-z0-9+.\-]*://(?:[^/?#@]*@)?([^/?#:]*)"


def sql_str(s):
    return "'" + str(s).replace("'", "''") + "'"


def snapshot_dirs(crawl):
    """[(seq, directory)] of the crawl in numeric order."""
    root = os.path.join(crawl, "snapshots")
    if not os.path.isdir(root):
        raise SystemExit(f"{crawl}: not a crawl directory (no snapshots/ folder)")
    snaps = sorted((int(name), os.path.join(root, name)) for name in os.listdir(root) if name.isdigit())
    for seq, path in snaps:
        for table in ("pages.parquet", "links.parquet"):
            if not os.path.isfile(os.path.join(path, table)):
                raise SystemExit(f"{path}: no {table} (this peer reads Parquet crawls only)")
    return snaps


# --------------------------------------------------------------------------------
# The SQL
# --------------------------------------------------------------------------------

# Load phase, one pass over the whole history. `page_src` / `link_src` are views
# over the Parquet files with the snapshot's seq added.
LOAD_SQL = f"""
CREATE MACRO url_host(u) AS regexp_extract(u, '{HOST_REGEX}', 1);

-- Every URL of the input (page or link end) with an integer id, its host and the
-- first snapshot in which it was known.
CREATE TABLE urls AS
SELECT row_number() OVER () AS id, url, url_host(url) AS host, first_seq
FROM (SELECT url, min(seq) AS first_seq
      FROM (SELECT seq, url FROM page_src
            UNION ALL SELECT seq, src FROM link_src
            UNION ALL SELECT seq, dst FROM link_src)
      GROUP BY url);

-- Pages fetched per snapshot. A fetched page is new at seq iff first_seq = seq
-- (fetching it makes it known at seq), old iff first_seq < seq.
CREATE TABLE fetched AS
SELECT DISTINCT p.seq, u.id, u.host, u.first_seq
FROM page_src p JOIN urls u USING (url);

-- The links that can lie on a path of the closure: every such edge ends in a new
-- page, which is first known in the snapshot of the link. On-site, no self-links.
-- (Whether the source was fetched, and the destination too, is checked per snapshot.)
-- The links to first-known pages are materialized first: left to itself, the join
-- order optimizer joins urls with urls on the host, a cross product per host.
CREATE TABLE new_edges AS
WITH to_new AS MATERIALIZED (
    SELECT l.seq, l.src, d.id AS dst, d.host AS dst_host
    FROM link_src l JOIN urls d ON d.url = l.dst AND d.first_seq = l.seq
    WHERE l.seq > $first)
SELECT DISTINCT n.seq, s.id AS src, n.dst
FROM to_new n JOIN urls s ON s.url = n.src AND s.host = n.dst_host
WHERE s.id <> n.dst;
"""

# Closure phase, per snapshot $t: Z_t by WITH RECURSIVE. UNION (not UNION ALL)
# makes it a set, so it terminates on cycles among new pages.
CLOSURE_SQL = """
CREATE OR REPLACE TABLE z AS
WITH RECURSIVE
  f AS (SELECT id, host, first_seq < $t AS old FROM fetched WHERE seq = $t),
  -- E_t restricted to edges ending in a new page: source fetched at t (old or new),
  -- destination a new page (fetched at t, never known before).
  e AS (SELECT e.src, e.dst, fs.old AS src_old
        FROM new_edges e
        JOIN f fs ON fs.id = e.src
        JOIN f fd ON fd.id = e.dst
        WHERE e.seq = $t AND NOT fd.old),
  closure(x, y) AS (
      SELECT src, dst FROM e WHERE src_old
      UNION
      SELECT c.x, e.dst FROM closure c JOIN e ON e.src = c.y AND NOT e.src_old)
SELECT c.x, c.y, f.host
FROM closure c JOIN f ON f.id = c.x
"""

# Per-snapshot counts of the closure.
COUNTS_SQL = """
SELECT (SELECT count(*) FROM fetched WHERE seq = $t AND first_seq = $t) AS new_pages,
       (SELECT count(*) FROM z) AS covering_pairs,
       (SELECT count(DISTINCT y) FROM z) AS coverable
"""

# Jaccard phase, per snapshot: the histogram of the pairs of old pages of a site
# with non-empty N_t, from a self-join of Z_t on the new page.
JACCARD_SQL = f"""
WITH deg AS (SELECT x, host, count(*) AS n FROM z GROUP BY x, host),
inter AS (
    SELECT a.x AS x1, b.x AS x2, count(*) AS i
    FROM z a JOIN z b ON a.y = b.y AND a.x < b.x
    GROUP BY a.x, b.x),
intersecting AS (
    SELECT least({BINS - 1}, (i * {BINS}) // (d1.n + d2.n - i)) AS bin, count(*) AS pairs
    FROM inter JOIN deg d1 ON d1.x = inter.x1 JOIN deg d2 ON d2.x = inter.x2
    GROUP BY bin),
all_pairs AS (SELECT sum(n * (n - 1) // 2) AS pairs
              FROM (SELECT host, count(*) AS n FROM deg GROUP BY host)),
disjoint AS (SELECT 0 AS bin,
                    coalesce((SELECT pairs FROM all_pairs), 0)
                    - (SELECT count(*) FROM inter) AS pairs)
SELECT bin, sum(pairs)::BIGINT AS pairs
FROM (SELECT * FROM intersecting UNION ALL SELECT * FROM disjoint)
GROUP BY bin ORDER BY bin
"""


def run_peer(crawl, threads=None, memory_limit=None, progress=False, last_only=False):
    """Runs the SQL peer on CRAWL; returns the JSON-able summary. With `last_only`,
    the recomputation of the last snapshot alone: the whole history is still read
    (which pages are new depends on every earlier snapshot), but only the last
    snapshot's links and queries."""
    started = time.perf_counter()
    snaps = snapshot_dirs(crawl)
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    if memory_limit:
        con.execute(f"SET memory_limit = {sql_str(memory_limit)}")
    con.execute(f"SET temp_directory = {sql_str(tempfile.gettempdir() + '/discovery_sql.duckdb.tmp')}")
    pages = " UNION ALL ".join(
        f"SELECT {seq} AS seq, url FROM read_parquet({sql_str(os.path.join(d, 'pages.parquet'))})"
        for seq, d in snaps)
    links = " UNION ALL ".join(
        f"SELECT {seq} AS seq, src, dst FROM read_parquet({sql_str(os.path.join(d, 'links.parquet'))})"
        for seq, d in snaps)
    con.execute(f"CREATE VIEW page_src AS {pages}")
    con.execute(f"CREATE VIEW link_src AS {links}")
    for statement in LOAD_SQL.split(";"):
        if statement.strip():
            after = snaps[-2][0] if last_only and len(snaps) > 1 else snaps[0][0]
            con.execute(statement, {"first": after} if "$first" in statement else None)
    load_seconds = time.perf_counter() - started
    if progress:
        print(f"discovery_sql: loaded {len(snaps)} snapshots in {load_seconds:.1f} s", file=sys.stderr)

    rows = []
    for seq, _ in (snaps[-1:] if last_only else snaps[1:]):
        t0 = time.perf_counter()
        con.execute(CLOSURE_SQL, {"t": seq})
        new_pages, covering_pairs, coverable = con.execute(COUNTS_SQL, {"t": seq}).fetchone()
        t1 = time.perf_counter()
        hist = [0] * BINS
        for b, pairs in con.execute(JACCARD_SQL).fetchall():
            hist[b] += pairs
        t2 = time.perf_counter()
        rows.append({"snapshot": seq, "new_pages": new_pages, "covering_pairs": covering_pairs,
                     "coverable": coverable, "jaccard": hist,
                     "closure_seconds": round(t1 - t0, 4), "jaccard_seconds": round(t2 - t1, 4)})
        if progress:
            print(f"discovery_sql: snapshot {seq}: {new_pages} new pages, {covering_pairs} covering pairs, "
                  f"closure {t1 - t0:.2f} s, jaccard {t2 - t1:.2f} s", file=sys.stderr)
    con.close()
    total = time.perf_counter() - started
    return {
        "crawl": os.path.abspath(crawl),
        "duckdb": duckdb.__version__,
        "threads": threads or os.cpu_count(),
        "seconds": {
            "load": round(load_seconds, 3),
            "closure": round(sum(r["closure_seconds"] for r in rows), 3),
            "jaccard": round(sum(r["jaccard_seconds"] for r in rows), 3),
            "total": round(total, 3),
        },
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "snapshots": rows,
    }


# --------------------------------------------------------------------------------
# The comparison with webevo
# --------------------------------------------------------------------------------

def webevo_results(out):
    """{seq: {...}} from webevo's output OUT, and whether it has jaccard_histogram."""
    def table(name):
        return f"read_parquet({sql_str(os.path.join(out, name, '**', '*.parquet'))}, hive_partitioning = true)"

    con = duckdb.connect()
    res = {}
    for seq, new_pages in con.execute(f"SELECT snapshot, new_pages FROM {table('snapshots')}").fetchall():
        res[int(seq)] = {"new_pages": new_pages, "covering_pairs": 0, "coverable": 0, "jaccard": [0] * BINS}
    if os.path.isdir(os.path.join(out, "cover_summary")):
        for seq, pairs, coverable in con.execute(
                f"SELECT snapshot, sum(covering_pairs), sum(new_pages - orphans) FROM {table('cover_summary')} "
                "GROUP BY snapshot").fetchall():
            res[int(seq)]["covering_pairs"] = int(pairs)
            res[int(seq)]["coverable"] = int(coverable)
    has_jaccard = os.path.isdir(os.path.join(out, "jaccard_histogram"))
    if has_jaccard:
        for seq, lo, hi, pairs in con.execute(
                f"SELECT snapshot, bin_lo, bin_hi, pairs FROM {table('jaccard_histogram')}").fetchall():
            b = round(lo * BINS)
            if not (0 <= b < BINS and abs(hi - (b + 1) / BINS) < 1e-9):
                raise ValueError(f"jaccard_histogram: snapshot {seq}: odd bin [{lo}, {hi})")
            res[int(seq)]["jaccard"][b] += int(pairs)
    con.close()
    return res, has_jaccard


def compare(peer, out):
    """Compares the peer's summary with webevo's output OUT.

    Returns (mismatches, notes): lists of readable lines; no mismatches = agreement.
    """
    web, has_jaccard = webevo_results(out)
    mismatches, notes = [], []
    if not os.path.isdir(os.path.join(out, "cover_summary")):
        mismatches.append(f"{out}: no cover_summary table (was webevo run with jobs/discovery.toml?)")
    if not has_jaccard:
        notes.append(f"{out} has no jaccard_histogram table: the histogram comparison was skipped")
    keys = ["new_pages", "covering_pairs", "coverable"] + (["jaccard"] if has_jaccard else [])
    peer_seqs = {r["snapshot"] for r in peer["snapshots"]}
    first = min(web) if web else None
    for seq in sorted(web):
        if seq != first and seq not in peer_seqs:
            mismatches.append(f"snapshot {seq}: in webevo's output, not in the SQL peer's")
    for row in peer["snapshots"]:
        w = web.get(row["snapshot"])
        if w is None:
            mismatches.append(f"snapshot {row['snapshot']}: not in webevo's output")
            continue
        for k in keys:
            if row[k] != w[k]:
                mismatches.append(f"snapshot {row['snapshot']}: {k}: SQL {row[k]} vs webevo {w[k]}")
    return mismatches, notes


def run_webevo(crawl, out, workers=1, job="jobs/discovery.toml", fresh=True):
    """Runs `webevo run` on CRAWL into OUT (emptied first when `fresh`; else the
    run continues from what OUT has committed); returns its wall seconds."""
    if fresh:
        shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    subprocess.run([WEBEVO, "run", "--input", crawl, "--output", out, "--job", job, "-q", "-w", str(workers)],
                   check=True, cwd=ROOT)
    return time.perf_counter() - started


def check(crawl, peer=None, out=None):
    """Runs the peer (unless given) and webevo (unless OUT is given), compares them,
    prints the outcome; returns True when they agree."""
    if peer is None:
        peer = run_peer(crawl)
    tmp = None
    if out is None:
        tmp = tempfile.mkdtemp(prefix="discovery-sql-check-")
        out = os.path.join(tmp, "out")
        run_webevo(crawl, out)
    try:
        mismatches, notes = compare(peer, out)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    for n in notes:
        print(f"discovery_sql: note: {n}", file=sys.stderr)
    for m in mismatches:
        print(f"discovery_sql: MISMATCH: {m}", file=sys.stderr)
    if not mismatches:
        print(f"discovery_sql: the SQL peer agrees with webevo on {len(peer['snapshots'])} snapshots", file=sys.stderr)
    return not mismatches


def to_json(peer):
    """The summary as JSON text, one line per snapshot."""
    head = {k: v for k, v in peer.items() if k != "snapshots"}
    rows = ",\n  ".join(json.dumps(r) for r in peer["snapshots"])
    return json.dumps(head, indent=1)[:-2] + f',\n "snapshots": [\n  {rows}\n ]\n}}'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("crawl")
    ap.add_argument("--json", help="write the summary here instead of stdout")
    ap.add_argument("--threads", type=int, help="DuckDB threads (default: all cores)")
    ap.add_argument("--memory-limit", help="DuckDB memory_limit, e.g. 16GB")
    ap.add_argument("--check", metavar="OUT", help="compare with webevo's output directory OUT")
    ap.add_argument("--run-webevo", action="store_true", help="run webevo (jobs/discovery.toml) and compare")
    ap.add_argument("--last-only", action="store_true",
                    help="recompute the last snapshot only (reading the whole history it depends on)")
    ap.add_argument("-q", "--quiet", action="store_true")
    args = ap.parse_args()

    peer = run_peer(args.crawl, args.threads, args.memory_limit, progress=not args.quiet,
                    last_only=args.last_only)
    text = to_json(peer)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    if args.check or args.run_webevo:
        if not check(args.crawl, peer, args.check):
            sys.exit(1)


if __name__ == "__main__":
    main()
