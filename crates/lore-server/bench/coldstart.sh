#!/usr/bin/env bash
# A new `lore serve`'s first answers: seeds a temporary store with N lessons (seed.py), then
# starts the server RUNS times without the saved recall index and RUNS times with it, and for
# each start prints when the first POST /v1/recall answered (its status and Lore-Recall-Index
# header), when /readyz first said the index is ready, and the server's RSS then (and per
# lesson), then the latency of RECALLS recalls after it and its anonymous memory after those.
# The start figures are from the server's start, as the operator sees it.
# Usage: coldstart.sh [LORE_BINARY] [N]   (defaults: target/release/lore 100000); RUNS (env,
# default 3), RECALLS (env, default 200).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lore=${1:-target/release/lore}
n=${2:-100000}
runs=${RUNS:-3}
port=${PORT:-7178}
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "coldstart.sh: port $port is in use; pick another with PORT=" >&2
  exit 1
fi
server=
work=$(mktemp -d)
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
python3 "$here/seed.py" "$n" > "$work/lessons.jsonl"
"$lore" --home "$work/.lore" --skills "$work/skills" import --jsonl "$work/lessons.jsonl" >/dev/null
url="http://127.0.0.1:$port"
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }

# Starts the server, fires a recall every 20 ms until one answers, then polls /readyz.
start() {
  local label=$1 t0 first status header rss
  t0=$(now)
  "$lore" --home "$work/.lore" --skills "$work/skills" serve --addr "127.0.0.1:$port" \
    2>>"$work/server.log" >/dev/null &
  server=$!
  while :; do
    header=$(curl -s -o /dev/null -D - -w '%{http_code}' -m 60 "$url/v1/recall" \
      -H 'content-type: application/json' -d '{"query":"a refund that mentions a deadline"}' \
      2>/dev/null || true)
    status=${header: -3}
    [ "$status" != "000" ] && [ -n "$status" ] && break
    sleep 0.02
  done
  first=$(since "$t0")
  local index
  index=$(printf '%s' "$header" | tr -d '\r' | awk -F': ' 'tolower($1)=="lore-recall-index"{print $2}')
  while ! curl -s -D - -o /dev/null "$url/readyz" | tr -d '\r' | grep -qi '^lore-recall-index: ready'; do
    sleep 0.05
  done
  local ready
  ready=$(since "$t0")
  rss=$(awk '/^VmRSS/{print $2}' "/proc/$server/status")
  # Anonymous memory is the process's own; file pages are what it maps (the saved index's
  # vectors, read in place), which the kernel shares and can drop.
  anon=$(awk '/^RssAnon/{print $2}' "/proc/$server/status")
  file=$(awk '/^RssFile/{print $2}' "/proc/$server/status")
  # Then RECALLS recalls one after another, each a different question of seed.py's words: their
  # latency once warm (a fresh connection each, as curl times it), and the anonymous memory
  # after them, which shows whether what the allocator handed back is asked for again.
  local subjects=(ticket invoice refund outage contract payroll customer order deployment
    chargeback escalation renewal) conditions=("mentions a deadline" "is written in French"
    "includes a stack trace" "comes from a VIP account" "repeats an earlier request"
    "arrives outside business hours" "asks for a refund over 500 EUR") times=() i
  for ((i = 0; i < ${RECALLS:-200}; i++)); do
    times+=("$(curl -s -o /dev/null -w '%{time_total}' -m 60 "$url/v1/recall" \
      -H 'content-type: application/json' \
      -d "{\"query\":\"a ${subjects[i % 12]} that ${conditions[i / 12 % 7]}\"}")")
  done
  local sorted p50 p99 anon_after
  sorted=$(printf '%s\n' "${times[@]}" | sort -g)
  p50=$(printf '%s\n' "$sorted" | awk -v n="${#times[@]}" 'NR == int((n + 1) * 0.50) {print $1 * 1000}')
  p99=$(printf '%s\n' "$sorted" | awk -v n="${#times[@]}" 'NR == int((n + 1) * 0.99) {print $1 * 1000}')
  anon_after=$(awk '/^RssAnon/{print $2}' "/proc/$server/status")
  printf '%s: first recall %s (%s) at %.2f s; index ready at %.2f s; RSS %d MB, %.0f bytes a lesson (anonymous %.0f, file %.0f); %d recalls p50 %.1f ms, p99 %.1f ms, anonymous then %.0f; %s\n' \
    "$label" "$status" "${index:-no header}" "$first" "$ready" $((rss / 1024)) \
    "$(echo "$rss * 1024 / $n" | bc -l)" "$(echo "$anon * 1024 / $n" | bc -l)" \
    "$(echo "$file * 1024 / $n" | bc -l)" "${#times[@]}" "$p50" "$p99" \
    "$(echo "$anon_after * 1024 / $n" | bc -l)" "$(uptime | sed 's/.*load/load/')"
  kill "$server"
  wait "$server" 2>/dev/null || true
  server=
}

for run in $(seq "$runs"); do
  rm -f "$work/.lore/index/lore.recall"
  start "no saved index, run $run of $runs"
done
for run in $(seq "$runs"); do
  start "saved index, run $run of $runs"
done
ls -l "$work/.lore/index"
