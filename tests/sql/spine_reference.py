#!/usr/bin/env python3
"""An independent reference implementation of the README's definitions of
webevo's two foundation tables, `snapshots` and `host_snapshots`.

This script is a test oracle. It recomputes both tables directly from a crawl
directory, in DuckDB SQL, from the definitions below (the README's), and compares
the result row by row with what `webevo run` wrote. It shares no code and no
algorithm with webevo (no incremental ledger, no per-host deltas: every set is
materialized for every snapshot): if both agree, the dataflow computes the numbers
the README promises.

    python3 tests/sql/spine_reference.py INPUT_DIR OUTPUT_DIR [--committed-only]

Exit status: 0 when both tables match exactly, 1 on a mismatch (a readable diff
is printed), 2 on a usage or input error, 3 when the `duckdb` Python module is
not installed (the Rust test treats 3 as "skipped").

Definitions implemented (t runs over the snapshots in numeric order of <seq>;
"t-1" is the previous snapshot in that order, not seq-1):

  F_t  distinct URLs of the pages table of t (fetched). Duplicate page rows count
       once; the row with the greatest fetch_time (default: the snapshot time)
       supplies the digest.
  L_t  distinct (src, dst) rows of the links table of t, after dropping rows with
       an end that is not a web URL (mailto:, javascript:, ...: "unparsable") and
       self-links (src == dst).
  K_t  F_t ∪ {src, dst of L_t} (known).
  E_t  links. Full snapshot: L_t. Partial snapshot: L_t ∪ {(s,d) ∈ E_{t-1} :
       s ∉ F_t and s is not the src of any row of L_t}. E_{-1} = ∅.
  A_t  alive. Full: F_t. Partial: A_{t-1} ∪ F_t. A_{-1} = ∅.

  new page at t      url ∈ F_t and url ∉ K_s for every s < t
  gone page at t     (full snapshots only) url ∈ A_{t-1} and url ∉ F_t
  changed page at t  url ∈ F_t and its previous observation (latest s < t with
                     url ∈ F_s) had a non-null digest, the digest now is
                     non-null, and they differ
  links, new_links, removed_links   |E_t|, |E_t \\ E_{t-1}|, |E_{t-1} \\ E_t|,
                     attributed to the host of src
  new host at t      some page of h ∈ F_t and no page of h ∈ K_s for any s < t

`snapshots` has one row per snapshot; `host_snapshots` one row per host and
snapshot for hosts with pages_fetched > 0 or links > 0 or gone_pages > 0 or
removed_links > 0.

The recursive sets E_t and A_t are built by a Python loop that runs one SQL
statement per snapshot (and set); everything else is plain SQL over the whole
history. Input URLs are assumed to be normalized already (webevo normalizes them
with the WHATWG parser; the generator writes normalized URLs).
"""

import gzip
import json
import os
import re
import sys
import time as wallclock
from datetime import datetime, timezone

try:
    import duckdb
except ImportError:
    print(
        "spine reference: skipped: the Python module `duckdb` is not installed "
        "(pip install duckdb)",
        file=sys.stderr,
    )
    sys.exit(3)


# The host of a URL: what follows "scheme://" (and any user-info "...@") up to the
# next "/", "?", "#" or ":" (a bracketed IPv6 address is taken whole). A string
# without a "scheme://host" part (mailto:, javascript:, a relative reference) gives
# '' and is not a web URL.
HOST_REGEX = r"^[A-Za-z][A-Za-z0-9+.\-]*://(?:[^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)"

# Output columns, in webevo's order (the partition column `snapshot` first here).
SNAPSHOTS_COLUMNS = [
    "snapshot", "time", "partial", "pages_fetched", "pages_known", "new_pages",
    "gone_pages", "changed_pages", "links", "new_links", "removed_links", "hosts",
    "new_hosts",
]
HOST_SNAPSHOTS_COLUMNS = [
    "snapshot", "host", "pages_fetched", "pages_known", "new_pages", "gone_pages",
    "changed_pages", "links", "new_links", "removed_links", "new_host",
]
# Columns that identify a row, for the diff.
KEYS = {"snapshots": ["snapshot"], "host_snapshots": ["snapshot", "host"]}

DIFF_ROWS = 20


class InputProblem(Exception):
    """The input or output directory is not what this script expects."""


def sql_str(s):
    """A SQL string literal."""
    return "'" + str(s).replace("'", "''") + "'"


# --------------------------------------------------------------------------------
# Reading the crawl directory
# --------------------------------------------------------------------------------

def parse_time_us(text, where):
    """A time given as unix seconds or RFC 3339, in microseconds since the epoch."""
    text = text.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text) * 1_000_000
    # Python's fromisoformat wants at most 6 fractional digits; truncate extra ones.
    m = re.fullmatch(r"(\d{4}-\d\d-\d\d)[Tt ](\d\d:\d\d:\d\d)(\.\d+)?([Zz]|[+-]\d\d:\d\d)", text)
    if not m:
        raise InputProblem(f"{where}: time {text!r} is neither unix seconds nor RFC 3339")
    frac = (m.group(3) or ".0")[:7]
    zone = "+00:00" if m.group(4) in ("Z", "z") else m.group(4)
    dt = datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}{frac}{zone}")
    delta = dt - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def find_table(snap_dir, stem):
    """The path of `stem`.parquet / .tsv / .tsv.gz in `snap_dir`, or None."""
    found = [
        os.path.join(snap_dir, stem + ext)
        for ext in (".parquet", ".tsv", ".tsv.gz")
        if os.path.isfile(os.path.join(snap_dir, stem + ext))
    ]
    if len(found) > 1:
        raise InputProblem(f"{snap_dir}: more than one {stem} table: {found}")
    return found[0] if found else None


def list_snapshots(input_dir):
    """[(seq, time_us, partial, pages_path, links_path or None)] in numeric order."""
    root = os.path.join(input_dir, "snapshots")
    if not os.path.isdir(root):
        raise InputProblem(f"{input_dir}: not a crawl directory (no snapshots/ folder)")
    snaps = []
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name.startswith(".") or not os.path.isdir(path):
            continue
        if not name.isdigit():
            raise InputProblem(f"{path}: snapshot folders are named by a non-negative integer")
        with open(os.path.join(path, "snapshot.json"), encoding="utf-8") as f:
            meta = json.load(f)
        time_us = parse_time_us(meta["time"], os.path.join(path, "snapshot.json"))
        partial = bool(meta.get("partial", False))
        pages = find_table(path, "pages")
        if pages is None:
            raise InputProblem(f"{path}: no pages table")
        snaps.append((int(name), time_us, partial, pages, find_table(path, "links")))
    snaps.sort()
    for a, b in zip(snaps, snaps[1:]):
        if a[0] == b[0]:
            raise InputProblem(f"{root}: duplicate snapshot number {a[0]}")
    return snaps


def source_relation(con, path):
    """A SQL relation reading `path`, and {column name: DuckDB type} of its columns.

    TSV files are plain tab-separated text with a header row and no quoting, as
    webevo reads them: every field is text, and empty fields become NULL below.
    """
    if path.endswith(".parquet"):
        rel = f"read_parquet({sql_str(path)})"
        types = {name: ty for name, ty, *_ in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()}
        return rel, {name: (f'"{name}"', ty) for name, ty in types.items()}
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        header = f.readline().rstrip("\r\n").split("\t")
    names = [h.strip() for h in header]
    # Columns are read positionally as c0, c1, ... so any header text is fine.
    spec = "{" + ", ".join(f"'c{i}': 'VARCHAR'" for i in range(len(names))) + "}"
    rel = (
        f"read_csv({sql_str(path)}, delim = '\\t', header = true, quote = '', escape = '', "
        f"auto_detect = false, columns = {spec}, "
        f"compression = {sql_str('gzip' if path.endswith('.gz') else 'none')})"
    )
    cols = {}
    for i, name in enumerate(names):
        cols.setdefault(name, (f"nullif(c{i}, '')", "VARCHAR"))
    return rel, cols


def time_us_expr(expr, ty):
    """SQL turning an input time cell (timestamp, unix seconds, or text) into µs."""
    ty = ty.upper()
    if ty.startswith("TIMESTAMP"):
        return f"epoch_us({expr})"
    if ty in ("BIGINT", "INTEGER", "SMALLINT", "UBIGINT", "UINTEGER"):
        return f"(({expr})::BIGINT * 1000000)"
    # Text: unix seconds if it is an integer, RFC 3339 otherwise.
    return (
        f"CASE WHEN regexp_full_match(trim({expr}), '[+-]?[0-9]+') "
        f"THEN trim({expr})::BIGINT * 1000000 "
        f"ELSE epoch_us(CAST(trim({expr}) AS TIMESTAMPTZ)) END"
    )


def load_input(con, input_dir):
    """Fills meta, pages_raw and links_raw; returns the snapshot list."""
    snaps = list_snapshots(input_dir)
    con.execute("""
        -- One row per snapshot; ord is the position in processing order (0, 1, ...).
        CREATE TEMP TABLE meta (ord INTEGER, seq BIGINT, time_us BIGINT, partial BOOLEAN);
        -- Every page and link row as read (the sets are built from these in SQL).
        CREATE TEMP TABLE pages_raw (ord INTEGER, url VARCHAR, fetch_us BIGINT, digest VARCHAR);
        CREATE TEMP TABLE links_raw (ord INTEGER, src VARCHAR, dst VARCHAR);
    """)
    con.executemany("INSERT INTO meta VALUES (?, ?, ?, ?)",
                    [(i, s[0], s[1], s[2]) for i, s in enumerate(snaps)])
    for ord_, (seq, _time_us, _partial, pages, links) in enumerate(snaps):
        rel, cols = source_relation(con, pages)
        if "url" not in cols:
            raise InputProblem(f"{pages}: no url column")
        url = f"trim({cols['url'][0]})"
        fetch = time_us_expr(*cols["fetch_time"]) if "fetch_time" in cols else "NULL"
        digest = f"CAST({cols['digest'][0]} AS VARCHAR)" if "digest" in cols else "NULL"
        con.execute(f"INSERT INTO pages_raw SELECT {ord_}, {url}, {fetch}, {digest} FROM {rel}")
        if links is not None:
            rel, cols = source_relation(con, links)
            if "src" not in cols or "dst" not in cols:
                raise InputProblem(f"{links}: needs src and dst columns")
            con.execute(f"INSERT INTO links_raw SELECT {ord_}, trim({cols['src'][0]}), "
                        f"trim({cols['dst'][0]}) FROM {rel}")
    return snaps


# --------------------------------------------------------------------------------
# The reference computation
# --------------------------------------------------------------------------------

# The per-snapshot sets that need no recursion. URLs are interned to integer ids
# first (pages are compared by URL string equality, exactly as the sets are defined;
# the ids only make the joins cheaper).
BASE_SETS_SQL = f"""
CREATE MACRO url_host(u) AS regexp_extract(u, '{HOST_REGEX}', 1);

-- Every distinct URL string of the input, with an id and its host ('' when the
-- string is not a web URL, e.g. mailto:...).
CREATE TEMP TABLE urls AS
SELECT row_number() OVER () AS id, url, url_host(url) AS host
FROM (SELECT url FROM pages_raw UNION SELECT src FROM links_raw UNION SELECT dst FROM links_raw) t(url);

-- F_t: (ord, page id) with the page's host and digest. A page listed twice in one
-- snapshot keeps the row with the greatest fetch_time (default: the snapshot time).
CREATE TEMP TABLE fetched AS
SELECT p.ord, u.id AS page, u.host, p.digest
FROM pages_raw p JOIN urls u USING (url) JOIN meta m USING (ord)
QUALIFY row_number() OVER (PARTITION BY p.ord, u.id
                           ORDER BY coalesce(p.fetch_us, m.time_us) DESC) = 1;

-- Link rows classified: unparsable (an end without scheme://host), self-link, or kept.
CREATE TEMP TABLE links_classified AS
SELECT l.ord, s.id AS src, d.id AS dst,
       s.host = '' OR d.host = '' AS unparsable,
       s.id = d.id AS self_link
FROM links_raw l JOIN urls s ON s.url = l.src JOIN urls d ON d.url = l.dst;

-- L_t: distinct kept (src, dst) rows.
CREATE TEMP TABLE links_clean AS
SELECT DISTINCT ord, src, dst
FROM links_classified
WHERE NOT unparsable AND NOT self_link;

-- K_t: fetched pages and both ends of every kept link row.
CREATE TEMP TABLE known AS
SELECT ord, page FROM fetched
UNION SELECT ord, src FROM links_clean
UNION SELECT ord, dst FROM links_clean;

-- The first snapshot in which each page, and each host, was known.
CREATE TEMP TABLE page_first AS
SELECT page, min(ord) AS first_ord FROM known GROUP BY page;
CREATE TEMP TABLE host_first AS
SELECT u.host, min(k.ord) AS first_ord
FROM known k JOIN urls u ON u.id = k.page GROUP BY u.host;

-- The recursive sets, filled one snapshot at a time by the loop below.
CREATE TEMP TABLE edges (ord INTEGER, src BIGINT, dst BIGINT);   -- E_t
CREATE TEMP TABLE alive (ord INTEGER, page BIGINT);              -- A_t
"""

# E_t from L_t and E_{t-1}. For a full snapshot ($partial false) the second branch
# is empty, so E_t = L_t; for a partial one it keeps the previous links of every
# source the snapshot neither fetched nor gave outlinks. UNION removes duplicates.
EDGES_STEP_SQL = """
INSERT INTO edges
SELECT $t, src, dst FROM links_clean WHERE ord = $t
UNION
SELECT $t, e.src, e.dst FROM edges e
WHERE $partial
  AND e.ord = $t - 1
  AND e.src NOT IN (SELECT page FROM fetched WHERE ord = $t)
  AND e.src NOT IN (SELECT src FROM links_clean WHERE ord = $t)
"""

# A_t = F_t for a full snapshot, A_{t-1} ∪ F_t for a partial one.
ALIVE_STEP_SQL = """
INSERT INTO alive
SELECT $t, page FROM fetched WHERE ord = $t
UNION
SELECT $t, page FROM alive WHERE $partial AND ord = $t - 1
"""

# Per-page and per-link facts, then both tables.
TABLES_SQL = """
-- One row per fetched page and snapshot, with its new / changed flags. lag() over
-- the page's fetches gives its previous observation.
CREATE TEMP TABLE page_facts AS
SELECT f.ord, f.page, f.host,
       pf.first_ord = f.ord AS is_new,     -- F_t ⊆ K_t, so "first known now" = new
       coalesce(f.prev_digest IS NOT NULL AND f.digest IS NOT NULL
                AND f.prev_digest <> f.digest, false) AS is_changed
FROM (SELECT *, lag(digest) OVER (PARTITION BY page ORDER BY ord) AS prev_digest
      FROM fetched) f
JOIN page_first pf USING (page);

-- Gone pages: alive at t-1 and not fetched at full snapshot t.
CREATE TEMP TABLE gone AS
SELECT m.ord, a.page, u.host
FROM meta m
JOIN alive a ON a.ord = m.ord - 1
JOIN urls u ON u.id = a.page
WHERE NOT m.partial
  AND NOT EXISTS (SELECT 1 FROM fetched f WHERE f.ord = m.ord AND f.page = a.page);

-- Every link of E_t or E_{t-1}, at t, with where it is present.
CREATE TEMP TABLE link_facts AS
SELECT coalesce(cur.ord, prev.ord) AS ord,
       coalesce(cur.src, prev.src) AS src,
       cur.src IS NOT NULL AS in_cur,
       prev.src IS NOT NULL AS in_prev
FROM edges cur
FULL OUTER JOIN (SELECT ord + 1 AS ord, src, dst FROM edges
                 WHERE ord + 1 < (SELECT count(*) FROM meta)) prev
  ON cur.ord = prev.ord AND cur.src = prev.src AND cur.dst = prev.dst;

-- Per-host aggregates.
CREATE TEMP TABLE host_pages AS
SELECT ord, host, count(*) AS pages_fetched,
       count(*) FILTER (is_new) AS new_pages,
       count(*) FILTER (is_changed) AS changed_pages
FROM page_facts GROUP BY ord, host;

CREATE TEMP TABLE host_known AS
SELECT k.ord, u.host, count(*) AS pages_known
FROM known k JOIN urls u ON u.id = k.page GROUP BY k.ord, u.host;

CREATE TEMP TABLE host_gone AS
SELECT ord, host, count(*) AS gone_pages FROM gone GROUP BY ord, host;

CREATE TEMP TABLE host_links AS
SELECT l.ord, u.host,
       count(*) FILTER (in_cur) AS links,
       count(*) FILTER (in_cur AND NOT in_prev) AS new_links,
       count(*) FILTER (in_prev AND NOT in_cur) AS removed_links
FROM link_facts l JOIN urls u ON u.id = l.src
GROUP BY l.ord, u.host;

-- host_snapshots: hosts with fetched pages, links, gone pages or removed links.
CREATE TEMP TABLE ref_host_snapshots AS
WITH host_keys AS (
    SELECT ord, host FROM host_pages
    UNION SELECT ord, host FROM host_gone
    UNION SELECT ord, host FROM host_links WHERE links > 0 OR removed_links > 0
)
SELECT m.seq AS snapshot, k.host,
       coalesce(p.pages_fetched, 0) AS pages_fetched,
       coalesce(kn.pages_known, 0) AS pages_known,
       coalesce(p.new_pages, 0) AS new_pages,
       coalesce(g.gone_pages, 0) AS gone_pages,
       coalesce(p.changed_pages, 0) AS changed_pages,
       coalesce(l.links, 0) AS links,
       coalesce(l.new_links, 0) AS new_links,
       coalesce(l.removed_links, 0) AS removed_links,
       coalesce(p.pages_fetched, 0) > 0 AND hf.first_ord = k.ord AS new_host
FROM host_keys k
JOIN meta m ON m.ord = k.ord
LEFT JOIN host_pages p ON p.ord = k.ord AND p.host = k.host
LEFT JOIN host_known kn ON kn.ord = k.ord AND kn.host = k.host
LEFT JOIN host_gone g ON g.ord = k.ord AND g.host = k.host
LEFT JOIN host_links l ON l.ord = k.ord AND l.host = k.host
LEFT JOIN host_first hf ON hf.host = k.host;

-- snapshots: computed from the global sets (not by summing host rows).
CREATE TEMP TABLE ref_snapshots AS
SELECT m.seq AS snapshot,
       make_timestamp(m.time_us) AS time,
       m.partial,
       coalesce(p.pages_fetched, 0) AS pages_fetched,
       coalesce(k.pages_known, 0) AS pages_known,
       coalesce(p.new_pages, 0) AS new_pages,
       coalesce(g.gone_pages, 0) AS gone_pages,
       coalesce(p.changed_pages, 0) AS changed_pages,
       coalesce(l.links, 0) AS links,
       coalesce(l.new_links, 0) AS new_links,
       coalesce(l.removed_links, 0) AS removed_links,
       coalesce(p.hosts, 0) AS hosts,
       coalesce(nh.new_hosts, 0) AS new_hosts
FROM meta m
LEFT JOIN (SELECT ord, count(*) AS pages_fetched,
                  count(*) FILTER (is_new) AS new_pages,
                  count(*) FILTER (is_changed) AS changed_pages,
                  count(DISTINCT host) AS hosts
           FROM page_facts GROUP BY ord) p USING (ord)
LEFT JOIN (SELECT ord, count(*) AS pages_known FROM known GROUP BY ord) k USING (ord)
LEFT JOIN (SELECT ord, count(*) AS gone_pages FROM gone GROUP BY ord) g USING (ord)
LEFT JOIN (SELECT ord, count(*) FILTER (in_cur) AS links,
                  count(*) FILTER (in_cur AND NOT in_prev) AS new_links,
                  count(*) FILTER (in_prev AND NOT in_cur) AS removed_links
           FROM link_facts GROUP BY ord) l USING (ord)
LEFT JOIN (SELECT f.ord, count(DISTINCT f.host) AS new_hosts
           FROM fetched f JOIN host_first hf ON hf.host = f.host AND hf.first_ord = f.ord
           GROUP BY f.ord) nh USING (ord);
"""

# Odd rows per snapshot, as webevo's manifest reports them (a side check).
ODD_ROWS_SQL = """
SELECT m.seq,
       coalesce(l.self_links, 0), coalesce(l.unparsable, 0),
       coalesce(l.duplicate_links, 0), coalesce(p.duplicate_pages, 0)
FROM meta m
LEFT JOIN (SELECT ord,
                  count(*) FILTER (NOT unparsable AND self_link) AS self_links,
                  count(*) FILTER (unparsable) AS unparsable,
                  count(*) FILTER (NOT unparsable AND NOT self_link)
                    - count(DISTINCT (src, dst)) FILTER (NOT unparsable AND NOT self_link)
                    AS duplicate_links
           FROM links_classified GROUP BY ord) l USING (ord)
LEFT JOIN (SELECT ord, count(*) - count(DISTINCT url) AS duplicate_pages
           FROM pages_raw GROUP BY ord) p USING (ord)
ORDER BY m.ord
"""


def compute_reference(con, input_dir):
    snaps = load_input(con, input_dir)
    con.execute(BASE_SETS_SQL)
    # webevo rejects these inputs outright; so does the reference.
    bad = con.execute("""
        SELECT 'a page URL without a host: ' || coalesce(p.url, 'NULL')
        FROM pages_raw p LEFT JOIN urls u USING (url) WHERE u.host IS NULL OR u.host = ''
        UNION ALL
        SELECT 'a link row with an empty src or dst' FROM links_raw WHERE src IS NULL OR dst IS NULL
        LIMIT 1""").fetchall()
    if bad:
        raise InputProblem(bad[0][0])
    # The recursive definitions, one snapshot at a time.
    for ord_, (_seq, _time, partial, _p, _l) in enumerate(snaps):
        params = {"t": ord_, "partial": partial}
        con.execute(EDGES_STEP_SQL, params)
        con.execute(ALIVE_STEP_SQL, params)
    con.execute(TABLES_SQL)
    return snaps


# --------------------------------------------------------------------------------
# webevo's output and the comparison
# --------------------------------------------------------------------------------

def load_webevo(con, output_dir, snaps, committed_only):
    """Creates web_snapshots / web_host_snapshots from the committed output.

    Returns a list of problems with the manifest itself (empty if none).
    """
    problems = []
    manifest_path = os.path.join(output_dir, "_manifest.json")
    if not os.path.isfile(manifest_path):
        raise InputProblem(f"{output_dir}: no _manifest.json (nothing committed)")
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    committed = [(int(s["seq"]), int(s["time"]), bool(s["partial"])) for s in manifest["snapshots"]]
    expected = [(s[0], s[1], s[2]) for s in snaps]
    if committed_only:
        seqs = {c[0] for c in committed}
        expected = [e for e in expected if e[0] in seqs]
    if committed != expected:
        missing = sorted({e[0] for e in expected} - {c[0] for c in committed})
        extra = sorted({c[0] for c in committed} - {e[0] for e in expected})
        hint = ""
        if missing and not extra:
            hint = (f"\n  snapshots {missing} are not committed "
                    "(pass --committed-only to compare only the committed ones)")
        problems.append(
            "manifest snapshots (seq, time µs, partial) differ from the input:\n"
            f"  input:    {expected}\n  manifest: {committed}{hint}")
    con.execute("CREATE TEMP TABLE committed (seq BIGINT)")
    con.executemany("INSERT INTO committed VALUES (?)", [(c[0],) for c in committed])
    if committed_only:
        con.execute("DELETE FROM ref_snapshots WHERE snapshot NOT IN (SELECT seq FROM committed)")
        con.execute("DELETE FROM ref_host_snapshots WHERE snapshot NOT IN (SELECT seq FROM committed)")

    for table, columns in (("snapshots", SNAPSHOTS_COLUMNS), ("host_snapshots", HOST_SNAPSHOTS_COLUMNS)):
        files = os.path.join(output_dir, table, "**", "*.parquet")
        rel = (f"read_parquet({sql_str(files)}, hive_partitioning = true, "
               "hive_types = {'snapshot': BIGINT}, union_by_name = true)")
        has_files = any(
            name.endswith(".parquet")
            for _dir, _sub, names in os.walk(os.path.join(output_dir, table)) for name in names)
        if not has_files:
            # No partitions at all: an empty table of the right shape.
            con.execute(f"CREATE TEMP TABLE web_{table} AS SELECT * FROM ref_{table} LIMIT 0")
            continue
        got = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()]
        if sorted(got) != sorted(columns):
            problems.append(f"{table}: webevo's columns {sorted(got)} are not {sorted(columns)}")
            con.execute(f"CREATE TEMP TABLE web_{table} AS SELECT * FROM ref_{table} LIMIT 0")
            continue
        # `time` is a UTC timestamp; compare it as a plain UTC timestamp (µs).
        select = ", ".join(
            "make_timestamp(epoch_us(time)) AS time" if c == "time" else c for c in columns)
        con.execute(f"CREATE TEMP TABLE web_{table} AS SELECT {select} FROM {rel} "
                    "WHERE snapshot IN (SELECT seq FROM committed)")
    return problems, manifest


def fmt_value(v):
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".") + "Z"
    return repr(v) if isinstance(v, str) else str(v)


def compare_table(con, table, columns):
    """Prints a diff of ref_<table> and web_<table>; returns (ok, reference row count)."""
    cols = ", ".join(columns)
    order = ", ".join(KEYS[table])
    ref_only = con.execute(
        f"SELECT {cols} FROM ref_{table} EXCEPT ALL SELECT {cols} FROM web_{table} ORDER BY {order}"
    ).fetchall()
    web_only = con.execute(
        f"SELECT {cols} FROM web_{table} EXCEPT ALL SELECT {cols} FROM ref_{table} ORDER BY {order}"
    ).fetchall()
    n_ref = con.execute(f"SELECT count(*) FROM ref_{table}").fetchone()[0]
    n_web = con.execute(f"SELECT count(*) FROM web_{table}").fetchone()[0]
    if not ref_only and not web_only:
        return True, n_ref

    print(f"MISMATCH in {table}: reference {n_ref} rows, webevo {n_web} rows; "
          f"{len(ref_only)} rows only in the reference, {len(web_only)} only in webevo's output")
    key_idx = [columns.index(k) for k in KEYS[table]]

    def key(row):
        return tuple(row[i] for i in key_idx)

    by_key = {}
    for side, rows in (("reference", ref_only), ("webevo", web_only)):
        for row in rows:
            by_key.setdefault(key(row), {}).setdefault(side, []).append(row)
    shown = 0
    for k in sorted(by_key, key=lambda k: tuple((x is None, str(x) if not isinstance(x, int) else x) for x in k)):
        if shown >= DIFF_ROWS:
            print(f"  ... and {len(by_key) - shown} more differing keys")
            break
        shown += 1
        sides = by_key[k]
        label = " ".join(f"{c}={fmt_value(v)}" for c, v in zip(KEYS[table], k))
        if len(sides) == 2 and len(sides["reference"]) == 1 and len(sides["webevo"]) == 1:
            r, w = sides["reference"][0], sides["webevo"][0]
            diffs = [f"{c}: reference {fmt_value(a)}, webevo {fmt_value(b)}"
                     for c, a, b in zip(columns, r, w) if a != b]
            print(f"  {label}: " + "; ".join(diffs))
            continue
        for side in ("reference", "webevo"):
            for row in sides.get(side, []):
                body = " ".join(f"{c}={fmt_value(v)}" for i, (c, v) in enumerate(zip(columns, row))
                                if i not in key_idx)
                print(f"  {label}: only in {side}: {body}")
    return False, n_ref


def check_odd_rows(con, manifest):
    """Compares the skipped-row counts in the manifest (a warning, never fatal)."""
    reported = {}
    for run in manifest.get("runs", []):
        for seq, odd in (run.get("odd_rows") or {}).items():
            reported[int(seq)] = (odd.get("self_links"), odd.get("unparsable_link_urls"),
                                  odd.get("duplicate_links"), odd.get("duplicate_pages"))
    warnings = []
    for seq, *mine in con.execute(ODD_ROWS_SQL).fetchall():
        if seq in reported and tuple(mine) != reported[seq]:
            warnings.append(
                f"snapshot {seq}: odd rows (self, unparsable, duplicate links, duplicate pages) "
                f"reference {tuple(mine)}, manifest {reported[seq]}")
    return warnings


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    flags = [a for a in argv[1:] if a.startswith("--")]
    if len(args) != 2 or any(f not in ("--committed-only",) for f in flags):
        print("usage: spine_reference.py INPUT_DIR OUTPUT_DIR [--committed-only]\n"
              "  --committed-only  compare only the snapshots webevo committed "
              "(default: every input snapshot must be committed)", file=sys.stderr)
        return 2
    input_dir, output_dir = args
    committed_only = "--committed-only" in flags
    started = wallclock.monotonic()

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    try:
        compute_reference(con, input_dir)
        problems, manifest = load_webevo(con, output_dir, list_snapshots(input_dir), committed_only)
    except (InputProblem, OSError, KeyError, ValueError, duckdb.Error) as e:
        print(f"spine reference: error: {e}", file=sys.stderr)
        return 2

    for p in problems:
        print(f"MISMATCH: {p}")
    ok = not problems
    counts = {}
    for table, columns in (("snapshots", SNAPSHOTS_COLUMNS), ("host_snapshots", HOST_SNAPSHOTS_COLUMNS)):
        table_ok, counts[table] = compare_table(con, table, columns)
        ok = ok and table_ok
    for w in check_odd_rows(con, manifest):
        print(f"warning: {w}")

    seconds = wallclock.monotonic() - started
    if not ok:
        print(f"spine reference: MISMATCH between {input_dir} and {output_dir} ({seconds:.1f}s)")
        return 1
    print(f"spine reference: snapshots {counts['snapshots']} rows, "
          f"host_snapshots {counts['host_snapshots']} rows match ({seconds:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
