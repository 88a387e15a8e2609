#!/usr/bin/env bash
# The training run of profile-guided optimization (`make build-pgo`). An
# instrumented webevo generates a crawl of the bench's shape at a fifth of its
# size (another seed than the benchmarks'; no news crawl), runs every analysis
# over all its snapshots but the last, then the last alone (the daily
# incremental run), and reads the last snapshot again as `webevo check` does;
# then it runs ECHO's policy simulation on the demo's news crawl (the bench's
# takes minutes). Two workers, as the demo and the benchmarks run it, so the
# exchange paths are trained too. The counts it leaves steer the optimizing
# build's inlining and code layout. Trained on the demo's crawl alone, the
# binary gained about two thirds as much on the bench crawl (BENCHMARKS.md,
# "Session 62").
#
# usage: scripts/pgo-train.sh INSTRUMENTED_WEBEVO WORK_DIR
# PGO_TRAIN_SCALE (default 0.2) sets the crawl's size; the integration test
# (tests/pgo_train.rs) runs this script at a tiny one so it keeps up with the CLI.
set -euo pipefail
# Both paths as given from where it was called, before the cd below.
bin=$(realpath "$1")
work=$(realpath -m "$2")
scale=${PGO_TRAIN_SCALE:-0.2}
rm -rf "$work"
mkdir -p "$work"
cd "$(dirname "$0")/.."

echo "pgo-train: generating the training crawl..." >&2
"$bin" generate --preset bench --scale "$scale" --seed 7 --no-news --out "$work/data" -q
snaps=$(ls "$work/data/snapshots" | sort -n)
last=$(echo "$snaps" | tail -n 1)

# The history without the last snapshot, as links to the same files.
mkdir -p "$work/history/snapshots"
for s in $snaps; do
  [ "$s" = "$last" ] && continue
  ln -s "$(cd "$work/data/snapshots/$s" && pwd)" "$work/history/snapshots/$s"
done
echo "pgo-train: every analysis over snapshots before $last, then $last alone..." >&2
"$bin" run --input "$work/history" --output "$work/out" --job jobs/all.toml -w 2 -q
"$bin" run --input "$work/data" --output "$work/out" --job jobs/all.toml -w 2 -q
"$bin" check --input "$work/data" --snapshot "$last" -w 2 --json >/dev/null
echo "pgo-train: ECHO's policy simulation on the demo's news crawl..." >&2
"$bin" generate --preset demo --seed 7 --out "$work/demo" -q
"$bin" run --input "$work/demo/news" --output "$work/out-news" --job jobs/echo-eval.toml -w 2 -q
rm -rf "$work/data" "$work/demo"
