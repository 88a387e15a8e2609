"""`make bench`: generate a preset, run webevo with 1 and 2 workers, and record
throughput, wall time per snapshot and peak memory in BENCHMARKS.md.

Usage: python benches/bench.py --preset {bench,demo}
The results replace the section of BENCHMARKS.md between the markers for this
preset; everything else in the file is kept.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import duckdb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WEBEVO = os.path.join(ROOT, "target", "release", "webevo")


def sh(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


def machine():
    cpu = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return f"{os.cpu_count()} cores ({cpu}), {mem_kb / 2**20:.0f} GiB, {platform.system()} {platform.release()}"


def run(data, out, workers):
    shutil.rmtree(out, ignore_errors=True)
    started = time.time()
    subprocess.run([WEBEVO, "run", "-q", "--input", data, "--output", out, "--job", "jobs/all.toml", "-w", str(workers)],
                   check=True, cwd=ROOT)
    wall = time.time() - started
    with open(os.path.join(out, "_manifest.json")) as f:
        record = json.load(f)["runs"][-1]
    links = dict(duckdb.sql(
        f"select snapshot, links from read_parquet('{out}/snapshots/**/*.parquet', hive_partitioning = true)").fetchall())
    return wall, record, links


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="bench", choices=["bench", "demo"])
    args = ap.parse_args()
    data = os.path.join(ROOT, f"{args.preset}-data")
    if not os.path.isdir(data):
        started = time.time()
        subprocess.run([WEBEVO, "generate", "--preset", args.preset, "--seed", "1", "--out", data], check=True)
        print(f"generated {data} in {time.time() - started:.0f} s", file=sys.stderr)

    results = {}
    for workers in (1, 2):
        print(f"running {args.preset} with {workers} worker(s)...", file=sys.stderr)
        results[workers] = run(data, os.path.join(ROOT, f"{args.preset}-out-w{workers}"), workers)

    lines = []
    date = datetime.date.today().isoformat()
    rev = sh("git", "-C", ROOT, "rev-parse", "--short", "HEAD")
    lines.append(f"### `{args.preset}` preset, {date}, webevo {rev}")
    lines.append("")
    lines.append(f"Machine: {machine()}. {sh('rustc', '--version')}.")
    lines.append(f"Command: `make bench{'-quick' if args.preset == 'demo' else ''}` "
                 f"(`webevo generate --preset {args.preset} --seed 1`, then "
                 f"`webevo run -w 1` and `-w 2` over all snapshots, all analyses of `jobs/all.toml`).")
    lines.append("")
    lines.append("| workers | snapshot | links | wall s | links/s/worker |")
    lines.append("|---|---|---|---|---|")
    for workers, (wall, record, links) in results.items():
        for seq, secs in sorted(record["snapshot_seconds"].items(), key=lambda kv: int(kv[0])):
            n = links.get(int(seq), 0)
            lines.append(f"| {workers} | {seq} | {n:,} | {secs:.2f} | {n / secs / workers:,.0f} |")
    lines.append("")
    lines.append("| workers | total wall s | state + pages table s | peak memory MiB | bytes per link (largest snapshot) | time of snapshots 1..last, max/min |")
    lines.append("|---|---|---|---|---|---|")
    for workers, (wall, record, links) in results.items():
        peak = record["peak_rss_bytes"]
        secs = [s for seq, s in sorted(record["snapshot_seconds"].items(), key=lambda kv: int(kv[0]))][1:]
        flat = max(secs) / min(secs) if secs else float("nan")
        lines.append(f"| {workers} | {wall:.1f} | {record['finish_seconds']:.1f} | {peak / 2**20:,.0f} | "
                     f"{peak / max(links.values()):.0f} | {flat:.2f} |")
    lines.append("")
    one, two = results[1][0], results[2][0]
    lines.append(f"2 workers vs 1: {one / two:.2f}x the throughput. Per-snapshot wall time runs from the first read "
                 "of a snapshot until every table of it is written; the state and the `pages` table are written "
                 "once per run, after the last snapshot. Peak memory is the process's resident high-water mark "
                 "(`VmHWM`), divided by the links of the largest snapshot.")
    section = "\n".join(lines) + "\n"

    path = os.path.join(ROOT, "BENCHMARKS.md")
    text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
    begin, end = f"<!-- {args.preset}:begin -->", f"<!-- {args.preset}:end -->"
    block = f"{begin}\n{section}{end}"
    if begin in text:
        text = text[:text.index(begin)] + block + text[text.index(end) + len(end):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(text)
    print(section)


if __name__ == "__main__":
    main()
