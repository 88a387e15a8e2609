#!/usr/bin/env bash
# Starts N webevo processes on this machine, each with W worker threads, and waits
# for all of them. Usage:
#   cluster/run-local.sh N W --input DIR --output DIR [--job jobs/all.toml]
# Process 0 prints the progress and the summary; the exit status is the first
# failing process's, or 0.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 PROCESSES WORKERS --input DIR --output DIR [more webevo run flags]" >&2
  exit 2
fi
n=$1; w=$2; shift 2
bin=${WEBEVO:-$(dirname "$0")/../target/dist/webevo}
hostfile=$(mktemp)
trap 'rm -f "$hostfile"' EXIT
base=${WEBEVO_BASE_PORT:-2101}
for ((p = 0; p < n; p++)); do echo "127.0.0.1:$((base + p))" >> "$hostfile"; done
pids=()
for ((p = 0; p < n; p++)); do
  quiet=(); [ "$p" -gt 0 ] && quiet=(-q)
  "$bin" run "$@" -w "$w" -n "$n" -p "$p" --hostfile "$hostfile" "${quiet[@]}" &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  if ! wait "$pid"; then code=$?; [ "$status" -eq 0 ] && status=$code; fi
done
exit "$status"
