"""A DuckDB + NumPy peer of webevo's per-page change-rate estimates (docs/change.md,
`page_change`): what a data engineer would write to recompute one snapshot's
estimates from the crawl, for the change entry of `make bench`.

DuckDB reads every snapshot's pages (a page's rate depends on its whole history),
keeps the latest row of a URL within a snapshot, and forms each page's intervals
with a window over its observations: consecutive observations both with a digest
and with increasing fetch times, changed when the digests differ. For the pages
fetched at the snapshot it then sums `n`, `X`, `T`, `U` and the span, and hands
the changed intervals to NumPy as one flat array. NumPy finds every page's
maximum-likelihood rate at once: the root of `sum_changed tau / (e^(lambda tau) - 1)
= U` by Newton's method on `ln lambda` from `X / T`, safeguarded by a bracket,
all pages in step over whole arrays. URLs are taken as they are (webevo normalizes
them; the generated data's are already normal).

Computes less than webevo's change analysis does for the snapshot: no interval
bounds, rate classes, lifespans, groups, aggregate tables or revisit plan.

Usage as a module: `recompute(data_dir, seq, threads) -> (estimates, timings)`;
as a script: `change_peer.py DATA SEQ [WEBEVO_OUTPUT]` prints the timings and,
given webevo's output, the largest differences from its `page_change` rows.
"""
import sys
import time

import duckdb
import numpy as np


def load(con, data_dir, seq):
    """Per page fetched at `seq`: its url, n, X, T, U, span and observations, in
    url order; and its changed intervals, flat, with each page's offset."""
    con.execute(f"""
        create or replace temp table obs as
        select seq, url, t, digest from (
            select *, row_number() over (partition by seq, url order by t desc) as dup
            from (select cast(regexp_extract(filename, '/snapshots/([0-9]+)/', 1) as bigint) as seq,
                         url, epoch_us(fetch_time) as t, digest
                  from read_parquet('{data_dir}/snapshots/*/pages.parquet', filename = true))
            where seq <= {seq}
        ) where dup = 1""")
    con.execute(f"""
        create or replace temp table steps as
        select url, t, digest,
               lag(t) over w as prev_t, lag(digest) over w as prev_digest
        from obs
        where url in (select url from obs where seq = {seq})
        window w as (partition by url order by seq)""")
    pages = con.execute("""
        select url,
               count(*) as observations,
               count(*) filter (where iv) as n,
               count(*) filter (where iv and changed) as x,
               coalesce(sum(tau) filter (where iv), 0) as total,
               coalesce(sum(tau) filter (where iv and not changed), 0) as unchanged,
               (max(t) - min(t)) / 1e6 as span_s
        from (select *, digest is not null and prev_digest is not null and t > prev_t as iv,
                     digest <> prev_digest as changed, (t - prev_t) / 1e6 as tau
              from steps)
        group by url order by url""").fetchnumpy()
    taus = con.execute("""
        select (t - prev_t) / 1e6 as tau
        from steps
        where digest is not null and prev_digest is not null and t > prev_t and digest <> prev_digest
        order by url, t""").fetchnumpy()["tau"]
    return pages, np.asarray(taus, dtype=np.float64)


def mle(x, total, unchanged, taus):
    """The maximum-likelihood rate of every page with 0 < X < n (NaN for the
    others): `taus` holds the pages' changed intervals in page order, `x` of
    them each."""
    live = (x > 0) & (unchanged > 0)
    lam = np.full(len(x), np.nan)
    idx = np.flatnonzero(live)
    # The changed intervals of the live pages, and which of them each is.
    page_of = np.repeat(np.arange(len(x)), x.astype(np.int64))
    keep = live[page_of]
    tau = taus[keep]
    owner = np.searchsorted(idx, page_of[keep])
    u = unchanged[idx]
    cur = x[idx] / total[idx]
    lo = np.zeros(len(idx))
    hi = np.full(len(idx), np.inf)
    active = np.ones(len(idx), dtype=bool)
    for _ in range(200):
        if not active.any():
            break
        a = active[owner]
        lt = cur[owner[a]] * tau[a]
        em = np.expm1(lt)
        f = np.bincount(owner[a], tau[a] / em, minlength=len(idx)) - u
        # d f / d ln(lambda): -sum tau * (lambda tau) e^(lambda tau) / (e^(lambda tau) - 1)^2.
        df = -np.bincount(owner[a], tau[a] * lt * (em + 1) / (em * em), minlength=len(idx))
        f, df = f[active], df[active]
        c = cur[active]
        # f falls as lambda grows: f > 0 means the root lies above.
        lo_a = np.where(f > 0, c, lo[active])
        hi_a = np.where(f > 0, hi[active], c)
        step = np.exp(np.log(c) - f / df)
        outside = ~((step > lo_a) & (step < hi_a))
        bisect = np.where(np.isinf(hi_a), 2 * c, 0.5 * (lo_a + hi_a))
        new = np.where(outside, bisect, step)
        done = (np.abs(new - c) <= 1e-12 * c) | ((hi_a - lo_a) <= 1e-14 * c)
        lo[active], hi[active], cur[active] = lo_a, hi_a, new
        active[np.flatnonzero(active)[done]] = False
    lam[idx] = cur
    # X = 0: no change seen; every interval changed: no finite maximum.
    lam[(x == 0) & (total > 0)] = 0.0
    return lam


def recompute(data_dir, seq, threads=2):
    """The estimates of the pages fetched at snapshot `seq`, and the timings."""
    con = duckdb.connect()
    con.execute(f"set threads = {threads}")
    started = time.perf_counter()
    pages, taus = load(con, data_dir, seq)
    loaded = time.perf_counter()
    n = pages["n"].astype(np.float64)
    x = pages["x"].astype(np.float64)
    total = pages["total"].astype(np.float64)
    unchanged = pages["unchanged"].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        naive = np.where(n > 0, x / total, np.nan)
        regular = np.where(n > 0, -np.log((n - x + 0.5) / (n + 0.5)) / (total / n), np.nan)
    rate = mle(pages["x"], total, unchanged, taus)
    done = time.perf_counter()
    estimates = {"url": pages["url"], "observations": pages["observations"], "n": pages["n"],
                 "x": pages["x"], "span_s": pages["span_s"], "naive": naive, "regular": regular,
                 "mle": rate}
    return estimates, {"load": loaded - started, "compute": done - loaded, "total": done - started}


def compare(estimates, output, seq):
    """The largest relative differences from webevo's `page_change` rows of the
    same pages, per estimate, and how many pages were compared."""
    con = duckdb.connect()
    ours = con.execute(f"""
        select url, observations, changes, intervals, span_s, lambda_naive, lambda_regular, lambda_mle
        from read_parquet('{output}/page_change/snapshot={seq}/*.parquet') order by url""").fetchnumpy()
    pos = {u: i for i, u in enumerate(ours["url"])}
    theirs = np.array([pos.get(u, -1) for u in estimates["url"]])
    if (theirs < 0).any():
        raise SystemExit(f"{(theirs < 0).sum()} pages of the peer have no page_change row")
    worst = {}
    for name, col in (("observations", "observations"), ("n", "intervals"), ("x", "changes")):
        worst[name] = int(np.max(np.abs(estimates[name].astype(np.int64) - ours[col][theirs].astype(np.int64))))
    for name, col in (("span_s", "span_s"), ("naive", "lambda_naive"), ("regular", "lambda_regular"),
                      ("mle", "lambda_mle")):
        a = np.asarray(estimates[name], dtype=np.float64)
        b = np.asarray(np.ma.filled(np.ma.asarray(ours[col][theirs], dtype=np.float64), np.nan))
        both = ~np.isnan(a) & ~np.isnan(b)
        if (np.isnan(a) != np.isnan(b)).any():
            raise SystemExit(f"{name}: the peer and webevo disagree on which pages have one")
        scale = np.maximum(np.abs(b[both]), 1e-300)
        worst[name] = float(np.max(np.abs(a[both] - b[both]) / scale)) if both.any() else 0.0
    return worst, len(theirs)


if __name__ == "__main__":
    data, seq = sys.argv[1], int(sys.argv[2])
    est, secs = recompute(data, seq)
    print(f"{len(est['url']):,} pages: load {secs['load']:.2f} s, compute {secs['compute']:.2f} s")
    if len(sys.argv) > 3:
        worst, n = compare(est, sys.argv[3], seq)
        print(f"against webevo's page_change ({n:,} pages):", worst)
