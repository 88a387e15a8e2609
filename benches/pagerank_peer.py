"""An igraph peer of webevo's personalized PageRank (docs/rankmass.md, `pagerank`).

The peer builds a snapshot's graph as docs/rankmass.md defines it (nodes: the
snapshot's pages and the ends of its links; edges: the distinct (src, dst) pairs
with src != dst; trust uniform over the main pages `scheme://host/`, or over all
nodes if there is none) and solves it with igraph's PRPACK. igraph's C core (since
0.9) passes the reset vector to PRPACK both as the damping jump and as the jump out
of a node without outlinks, which is webevo's rule "a dangling node gives its whole
rank to T". An exact NumPy power iteration over the same edges checks this
numerically (`l1_igraph_vs_numpy`).

Usage as a module: `compare(crawl_dir, snapshot, webevo_out) -> dict`.
Usage as a script:
    python benches/pagerank_peer.py --data CRAWL_DIR --snapshot N --webevo-out OUT_DIR
"""
import argparse
import json
import sys
import time
from pathlib import Path

import duckdb
import igraph as ig
import numpy as np

DAMPING = 0.85
# A URL with a host name (a normalized URL: `scheme://host...`).
HAS_HOST = r"^[^:/?#]+://[^/?#]"
# A main page: the path is exactly `/`, with no query (nor fragment) after it.
MAIN_PAGE = r"[^:/?#]+://[^/?#]+/"


def load_graph(con, crawl_dir, snapshot):
    """Reads a full snapshot's graph into integer ids.

    Leaves the temporary table `nodes(url, id)` in `con` (ids 0..n-1 in URL order)
    and returns (n, src, dst, trusted): the distinct edges as id arrays and the ids
    of the main pages.
    """
    snap = Path(crawl_dir) / "snapshots" / str(snapshot)
    meta = json.loads((snap / "snapshot.json").read_text())
    # A partial snapshot's graph keeps earlier outlinks of the pages it did not
    # cover, which its own links.parquet does not hold: this peer would build a
    # different graph than webevo.
    if meta.get("partial"):
        raise ValueError(f"snapshot {snapshot} of {crawl_dir} is partial; "
                         "the peer only rebuilds the graph of a full snapshot")
    # webevo's ingest skips link rows naming a URL without a host (`mailto:`,
    # `javascript:`: not pages, README's input section) and self-links, so their
    # ends only become nodes if the snapshot knows them otherwise.
    con.execute("""
        CREATE OR REPLACE TEMP TABLE links AS
        SELECT src, dst FROM read_parquet($1)
        WHERE src <> dst AND regexp_matches(src, $2) AND regexp_matches(dst, $2)
    """, [str(snap / "links.parquet"), HAS_HOST])
    con.execute("""
        CREATE OR REPLACE TEMP TABLE nodes AS
        SELECT url, row_number() OVER (ORDER BY url) - 1 AS id
        FROM (SELECT url FROM read_parquet(?)
              UNION SELECT src FROM links
              UNION SELECT dst FROM links)
    """, [str(snap / "pages.parquet")])
    n = con.execute("SELECT count(*) FROM nodes").fetchone()[0]
    # Sorted, so that every run hands igraph the same graph, edge order included.
    edges = con.execute("""
        SELECT DISTINCT s.id AS src, d.id AS dst
        FROM links l JOIN nodes s ON s.url = l.src JOIN nodes d ON d.url = l.dst
        ORDER BY src, dst
    """).fetchnumpy()
    trusted = con.execute("SELECT id FROM nodes WHERE regexp_full_match(url, ?)",
                          [MAIN_PAGE]).fetchnumpy()["id"]
    return n, edges["src"], edges["dst"], trusted


def trust_vector(n, trusted):
    """T: uniform over the trusted ids, or over all n nodes when there is none."""
    if len(trusted) == 0:
        return np.full(n, 1.0 / n)
    trust = np.zeros(n)
    trust[trusted] = 1.0 / len(trusted)
    return trust


def reference_pagerank(n, src, dst, trust, damping=DAMPING, tol=1e-12,
                       max_iterations=10_000):
    """docs/rankmass.md's iteration in float64, stopped once the L1 change < tol:

        r'(v) = sum_{u -> v} d r(u) / c(u) + T(v) ((1 - d) + d sum_{dangling u} r(u))
    """
    out_degree = np.bincount(src, minlength=n)
    dangling = out_degree == 0
    # d / c(u) for the nodes with outlinks; a dangling node's rank goes to T instead.
    share = np.divide(damping, out_degree, out=np.zeros(n), where=~dangling)
    r = trust.copy()
    for _ in range(max_iterations):
        jump = (1 - damping) + damping * r[dangling].sum()
        r_next = np.bincount(dst, weights=(r * share)[src], minlength=n) + jump * trust
        change = np.abs(r_next - r).sum()
        r = r_next
        if change < tol:
            return r
    raise RuntimeError(f"no convergence to {tol} in {max_iterations} iterations")


def igraph_pagerank(graph, trust, damping=DAMPING, repeats=3):
    """PRPACK's personalized PageRank and the best wall seconds of `repeats` solves.

    Each solve includes PRPACK's conversion of the igraph graph to its own
    structure, which igraph redoes on every call.
    """
    reset = trust.tolist()  # converted once, so that no solve pays for it
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        scores = graph.personalized_pagerank(directed=True, damping=damping,
                                             reset=reset, implementation="prpack")
        best = min(best, time.perf_counter() - started)
    return np.array(scores), best


def webevo_files(webevo_out, table, snapshot):
    """The Parquet glob of one snapshot of a webevo table; fails if it is empty."""
    part = Path(webevo_out) / table / f"snapshot={snapshot}"
    if not any(part.glob("*.parquet")):
        raise ValueError(f"{part} holds no Parquet file")
    return str(part / "*.parquet")


def read_webevo(con, webevo_out, snapshot, n):
    """webevo's scores aligned with the peer's node ids, and its pagerank_runs row.

    Needs the `nodes` table of load_graph; fails unless webevo has exactly the
    peer's nodes.
    """
    rows = con.execute("""
        SELECT n.id, w.score
        FROM read_parquet(?) w LEFT JOIN nodes n USING (url)
    """, [webevo_files(webevo_out, "pagerank", snapshot)]).fetchnumpy()
    ids = rows["id"]
    if len(ids) != n or np.ma.is_masked(ids) or len(np.unique(ids)) != n:
        raise ValueError(f"webevo's pagerank has {len(ids)} rows, not the peer's {n} "
                         "nodes one for one")
    scores = np.empty(n)
    scores[np.asarray(ids)] = rows["score"]
    run = con.execute("""
        SELECT iterations, warm_started, seconds, nodes, edges, trust_pages
        FROM read_parquet(?)
    """, [webevo_files(webevo_out, "pagerank_runs", snapshot)])
    names = [c[0] for c in run.description]
    values = run.fetchall()
    if len(values) != 1:
        raise ValueError(f"webevo's pagerank_runs has {len(values)} rows, not 1")
    return scores, dict(zip(names, values[0]))


def compare(crawl_dir, snapshot, webevo_out, damping=DAMPING, repeats=3):
    """Times the peer on one snapshot and compares it with webevo's output.

    `igraph_build_s` covers reading the Parquet files into integer ids and building
    the igraph Graph; `igraph_solve_s` is the best of `repeats` PRPACK solves;
    `numpy_reference_s` the exact power iteration (tolerance 1e-12) on the same
    arrays. `webevo_seconds` is pagerank_runs.seconds (webevo's steps only). A
    warm-started webevo run converges to the same fixed point as a cold one, so
    both compare alike; webevo stops at its rankmass.tolerance (1e-9 by default).
    """
    # Fail before the timed work rather than after it.
    for table in ("pagerank", "pagerank_runs"):
        webevo_files(webevo_out, table, snapshot)
    con = duckdb.connect()
    started = time.perf_counter()
    n, src, dst, trusted = load_graph(con, crawl_dir, snapshot)
    # zip over Python lists is igraph's fastest edge input: it iterates a NumPy
    # (E, 2) array element by element, several times slower.
    graph = ig.Graph(n=n, edges=zip(src.tolist(), dst.tolist()), directed=True)
    build_s = time.perf_counter() - started

    trust = trust_vector(n, trusted)
    igraph_scores, solve_s = igraph_pagerank(graph, trust, damping, repeats)
    started = time.perf_counter()
    exact = reference_pagerank(n, src, dst, trust, damping)
    reference_s = time.perf_counter() - started

    webevo_scores, run = read_webevo(con, webevo_out, snapshot, n)
    peer = {"nodes": n, "edges": len(src), "trust_pages": len(trusted) or n}
    for key, value in peer.items():
        if run[key] != value:
            raise ValueError(f"webevo has {run[key]} {key}, the peer {value}")
    return {
        **peer,
        "igraph_build_s": build_s,
        "igraph_solve_s": solve_s,
        "numpy_reference_s": reference_s,
        "l1_webevo_vs_igraph": float(np.abs(webevo_scores - igraph_scores).sum()),
        "l1_webevo_vs_numpy": float(np.abs(webevo_scores - exact).sum()),
        "l1_igraph_vs_numpy": float(np.abs(igraph_scores - exact).sum()),
        "webevo_seconds": run["seconds"],
        "webevo_iterations": run["iterations"],
        "warm_started": run["warm_started"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="crawl directory (with snapshots/)")
    ap.add_argument("--snapshot", type=int, required=True)
    ap.add_argument("--webevo-out", required=True,
                    help="webevo output directory holding pagerank/ and pagerank_runs/")
    args = ap.parse_args()
    try:
        result = compare(args.data, args.snapshot, args.webevo_out)
    except ValueError as err:
        sys.exit(f"pagerank_peer: {err}")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
