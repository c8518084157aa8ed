#!/usr/bin/env bash
# Two builds of `strata serve` side by side, same latte workload (kv.rn),
# interleaved runs: for a change's effect on the server, measured in one
# invocation on a noisy machine.
#
#   bench/cql_vs_cassandra/ab.sh BEFORE_BINARY AFTER_BINARY
#
# Environment: ROWS (300000), DURATION (15s), ROUNDS (2), WORKLOADS
# ("read write mix"), RATE (unset: saturation; else ops/s for both),
# WORK (/tmp/strata-ab, removed and made again: only this script's).
set -u
BEFORE=$1 AFTER=$2
HERE="$(cd "$(dirname "$0")" && pwd)"
LATTE="${LATTE:-$HOME/.cargo/bin/latte}"
ROWS="${ROWS:-300000}" DURATION="${DURATION:-15s}" ROUNDS="${ROUNDS:-2}"
WORKLOADS="${WORKLOADS:-read write mix}"
WORK="${WORK:-/tmp/strata-ab}"
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$WORK"
"$BEFORE" serve --data-dir "$WORK/before" --port 9143 > before.log 2>&1 & B=$!
"$AFTER" serve --data-dir "$WORK/after" --port 9144 > after.log 2>&1 & A=$!
trap 'kill $B $A 2>/dev/null; wait' EXIT
sleep 2
for p in 9143 9144; do
  "$LATTE" schema "$HERE/kv.rn" 127.0.0.1:$p -P rows="$ROWS" > /dev/null 2>&1
  "$LATTE" load "$HERE/kv.rn" 127.0.0.1:$p -P rows="$ROWS" --concurrency 128 --threads 1 --connections 1 -q > /dev/null 2>&1
done
fn() { case $1 in write) echo "-f write";; read) echo "-f read";; mix) echo "-f read:0.9 -f write:0.1";; esac; }
rate=(); [ -n "${RATE:-}" ] && rate=(-r "$RATE")
for r in $(seq 1 "$ROUNDS"); do for wl in $WORKLOADS; do for p in 9143 9144; do
  read -r l1 _ < /proc/loadavg
  # shellcheck disable=SC2046
  "$LATTE" run "$HERE/kv.rn" 127.0.0.1:$p $(fn "$wl") -P rows="$ROWS" --concurrency 128 \
    --threads 1 --connections 1 --consistency ONE "${rate[@]}" -w 3s -d "$DURATION" -q \
    -o "r$r-$wl-$p.json" > "r$r-$wl-$p.txt" 2>&1
  echo "r$r $wl $([ $p = 9143 ] && echo before || echo after) load=$l1 $(python3 "$HERE/summarize.py" --one "r$r-$wl-$p.json")"
done; done; done
