#!/usr/bin/env bash
# Seeds a temporary store with N lessons, serves it on loopback, and runs wrk against
# POST /v1/recall (one skill, and the whole store) and POST /v1/executions.
# Usage: run.sh [LORE_BINARY] [N] [DURATION] [CORES]
#   (defaults: target/release/lore 10000 20s, no pinning)
# CORES pins the server to that many cores (taskset, cores 0..CORES-1) and wrk to the ones
# after them, so recalls/s per core can be read off one machine; without it both float.
# RUNS (env, default 1) repeats each measurement; ONLY (env: recall-skill, recall-all or
# record) runs one of them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lore=${1:-target/release/lore}
n=${2:-10000}
duration=${3:-20s}
port=${PORT:-7177}
cores=${4:-}
runs=${RUNS:-1}
only=${ONLY:-}
# Something already answering on the port would be measured in place of this build's server.
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "run.sh: port $port is in use; stop what listens there or pick another with PORT=" >&2
  exit 1
fi
# Pinning: the server on cores 0..CORES-1, wrk on the rest (or beside the server when there is
# no other core), so the two do not take each other's cycles unseen.
on_server=() on_client=()
if [ -n "$cores" ]; then
  total=$(nproc --all)
  if ! [[ $cores =~ ^[1-9][0-9]*$ ]] || [ "$cores" -gt "$total" ]; then
    echo "run.sh: CORES must be a whole number from 1 to $total (this machine's cores), not '$cores'" >&2
    exit 1
  fi
  command -v taskset >/dev/null || { echo "run.sh: CORES needs taskset (util-linux)" >&2; exit 1; }
  on_server=(taskset -c "0-$((cores - 1))")
  if [ "$cores" -lt "$total" ]; then
    on_client=(taskset -c "$cores-$((total - 1))")
  else
    echo "run.sh: all $total cores go to the server; wrk shares them" >&2
  fi
fi
server=
work=$(mktemp -d)
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

python3 "$here/seed.py" "$n" > "$work/lessons.jsonl"
"$lore" --home "$work/.lore" --skills "$work/skills" import --jsonl "$work/lessons.jsonl" >/dev/null
"${on_server[@]}" "$lore" --home "$work/.lore" --skills "$work/skills" serve --addr "127.0.0.1:$port" 2>"$work/server.log" &
server=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/v1/status" >/dev/null && break; sleep 0.2; done
if ! kill -0 "$server" 2>/dev/null || ! curl -sf "http://127.0.0.1:$port/v1/status" >/dev/null; then
  echo "run.sh: the server did not start on port $port:" >&2
  cat "$work/server.log" >&2
  exit 1
fi
curl -s "http://127.0.0.1:$port/v1/status"; echo
# The first recall builds the recall index (fit, embed, HNSW); time it apart from the runs.
/usr/bin/time -f "first recall (index build): %e s" curl -s -o /dev/null \
  "http://127.0.0.1:$port/v1/recall" -H 'content-type: application/json' -d '{"query":"warm up"}'

bench() {
  local name=$1 title=$2
  shift 2
  [ -n "$only" ] && [ "$only" != "$name" ] && return
  for run in $(seq "$runs"); do
    echo "== $title, run $run of $runs${cores:+, server on $cores cores}; $(uptime | sed 's/.*load/load/')"
    "${on_client[@]}" "$@"
    sleep 5 # let requests wrk gave up on drain before the next run
  done
}
bench recall-skill "recall, one skill ($((n / 20)) of $n lessons)" \
  env SKILL=support/triage wrk -t2 -c16 -d"$duration" --latency -s "$here/recall.lua" "http://127.0.0.1:$port"
bench recall-all "recall, whole store ($n lessons)" \
  wrk -t2 -c16 -d"$duration" --timeout 10s --latency -s "$here/recall.lua" "http://127.0.0.1:$port"
bench record "record (POST /v1/executions)" \
  wrk -t2 -c16 -d"$duration" --latency -s "$here/executions.lua" "http://127.0.0.1:$port"
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^lore_recall_duration_seconds_(sum|count)|^lore_store'
ls -l "$work/.lore"
