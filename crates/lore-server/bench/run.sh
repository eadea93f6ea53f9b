#!/usr/bin/env bash
# Seeds a temporary store with N lessons, serves it on loopback, and runs wrk against
# POST /v1/recall (one skill, and the whole store) and POST /v1/executions.
# Usage: run.sh [LORE_BINARY] [N] [DURATION]   (defaults: target/release/lore 10000 20s)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lore=${1:-target/release/lore}
n=${2:-10000}
duration=${3:-20s}
port=${PORT:-7177}
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; wait 2>/dev/null; rm -rf "$work"' EXIT

python3 "$here/seed.py" "$n" > "$work/lessons.jsonl"
"$lore" --home "$work/.lore" --skills "$work/skills" import --jsonl "$work/lessons.jsonl" >/dev/null
"$lore" --home "$work/.lore" --skills "$work/skills" serve --addr "127.0.0.1:$port" 2>"$work/server.log" &
server=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/v1/status" >/dev/null && break; sleep 0.2; done
curl -s "http://127.0.0.1:$port/v1/status"; echo
# The first recall builds the recall index (fit, embed, HNSW); time it apart from the runs.
/usr/bin/time -f "first recall (index build): %e s" curl -s -o /dev/null \
  "http://127.0.0.1:$port/v1/recall" -H 'content-type: application/json' -d '{"query":"warm up"}'

bench() {
  echo "== $1"
  shift
  "$@"
  sleep 5 # let requests wrk gave up on drain before the next run
}
bench "recall, one skill ($((n / 20)) of $n lessons)" \
  env SKILL=support/triage wrk -t2 -c16 -d"$duration" --latency -s "$here/recall.lua" "http://127.0.0.1:$port"
bench "recall, whole store ($n lessons)" \
  wrk -t2 -c16 -d"$duration" --timeout 10s --latency -s "$here/recall.lua" "http://127.0.0.1:$port"
bench "record (POST /v1/executions)" \
  wrk -t2 -c16 -d"$duration" --latency -s "$here/executions.lua" "http://127.0.0.1:$port"
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^lore_recall_duration_seconds_(sum|count)|^lore_store'
ls -l "$work/.lore"
