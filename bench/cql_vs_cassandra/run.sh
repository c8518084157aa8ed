#!/usr/bin/env bash
# Side-by-side load run: `strata serve` and Cassandra 5.0.9 on this machine,
# through the same latte binary, workload (kv.rn) and client settings.
#
#   run.sh periodic|group
#
# Both servers run for the whole run (the one not measured is idle); each
# measured run records the load average and the CPU time of both servers.
# Phases: load ROWS rows into each; one unrecorded warm-up per server;
# saturation rounds (no rate limit) Strata, Cassandra, Strata, Cassandra...;
# then fixed-rate rounds in the same order at FIXED_FRACTION of the lower
# saturation throughput measured for that workload (the same rate for both).
set -euo pipefail
MODE="${1:?usage: run.sh periodic|group}"
HERE="$(cd "$(dirname "$0")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
LATTE="${LATTE:-$HOME/.cargo/bin/latte}"
STRATA="${STRATA:-$REPO/target/release/strata}"
WORK="${WORK:-/tmp/loadbench}"
OUT="${OUT:-$HERE/results/$MODE}"
ROWS="${ROWS:-1000000}"
DURATION="${DURATION:-30s}"
WARMUP="${WARMUP:-5s}"              # latte -w, before each measured run
WARMUP_RUN="${WARMUP_RUN:-15s}"     # one unrecorded run per workload and server after the load
ROUNDS="${ROUNDS:-2}"
CONCURRENCY="${CONCURRENCY:-128}"     # requests in flight (latte -p)
CONNECTIONS="${CONNECTIONS:-1}"       # latte --connections
THREADS="${THREADS:-1}"               # latte --threads
FIXED_FRACTION="${FIXED_FRACTION:-0.5}"
WORKLOADS="${WORKLOADS:-write read mix}"
STRATA_PORT=9143
CASSANDRA_PORT=9142

mkdir -p "$OUT" "$WORK/latte-logs"
export LATTE_LOG_DIR="$WORK/latte-logs"   # latte's debug logs, kept out of the tree
META="$OUT/runs.csv"
echo "mode,phase,round,server,workload,rate,load1,load5,server_cpu_s,other_server_cpu_s,elapsed_s,report" > "$META"

case "$MODE" in
  periodic) STRATA_SYNC=(--commitlog-sync periodic --commitlog-sync-period-ms 10000) ;;
  group)    STRATA_SYNC=(--commitlog-sync group --commitlog-sync-group-window-ms 10) ;;
  *) echo "mode must be periodic or group" >&2; exit 2 ;;
esac

STRATA_PID=""
cleanup() {
  if [ -n "$STRATA_PID" ] && kill -0 "$STRATA_PID" 2>/dev/null; then
    kill "$STRATA_PID"; wait "$STRATA_PID" 2>/dev/null || true
  fi
  "$HERE/cassandra.sh" stop || true
}
trap cleanup EXIT

# --- servers, each on a fresh data directory -------------------------------
rm -rf "$WORK/strata-$MODE" "$WORK/cassandra/data"
"$STRATA" serve --data-dir "$WORK/strata-$MODE" --port $STRATA_PORT "${STRATA_SYNC[@]}" \
  > "$OUT/strata-serve.log" 2>&1 &
STRATA_PID=$!
for i in $(seq 1 60); do
  (exec 3<>/dev/tcp/127.0.0.1/$STRATA_PORT) 2>/dev/null && break
  kill -0 "$STRATA_PID" || { cat "$OUT/strata-serve.log"; exit 1; }
  sleep 1
done
CASSANDRA_PID="$("$HERE/cassandra.sh" start "$MODE")"
cp "$WORK/cassandra/conf/cassandra.yaml" "$OUT/cassandra.yaml"
{ git -C "$REPO" rev-parse HEAD; "$STRATA" --version; } > "$OUT/environment.txt"; "$LATTE" --version >> "$OUT/environment.txt"
java -version 2>> "$OUT/environment.txt"; uname -a >> "$OUT/environment.txt"; nproc >> "$OUT/environment.txt"

port_of() { [ "$1" = strata ] && echo $STRATA_PORT || echo $CASSANDRA_PORT; }
pid_of() { [ "$1" = strata ] && echo "$STRATA_PID" || echo "$CASSANDRA_PID"; }
other_of() { [ "$1" = strata ] && echo cassandra || echo strata; }
# CPU seconds (user + system) a process has used so far.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
functions_of() {
  case "$1" in
    write) echo "-f write" ;; read) echo "-f read" ;; mix) echo "-f read:0.9 -f write:0.1" ;;
  esac
}
CLIENT=(--threads "$THREADS" --connections "$CONNECTIONS" --consistency ONE)

# measure PHASE ROUND SERVER WORKLOAD RATE(or "") DURATION
measure() {
  local phase=$1 round=$2 srv=$3 wl=$4 rate=$5 dur=$6
  local report="$OUT/$phase-r$round-$srv-$wl.json"
  local rate_arg=(); [ -n "$rate" ] && rate_arg=(-r "$rate")
  local pid other; pid="$(pid_of "$srv")"; other="$(pid_of "$(other_of "$srv")")"
  read -r load1 load5 _ < /proc/loadavg
  local c0 o0 t0 c1 o1 t1
  c0=$(cpu_s "$pid"); o0=$(cpu_s "$other"); t0=$(date +%s.%N)
  # shellcheck disable=SC2046
  "$LATTE" run "$HERE/kv.rn" 127.0.0.1:"$(port_of "$srv")" $(functions_of "$wl") \
    -P rows="$ROWS" --concurrency "$CONCURRENCY" "${CLIENT[@]}" "${rate_arg[@]}" \
    -w "$WARMUP" -d "$dur" -q -o "$report" > "$OUT/$phase-r$round-$srv-$wl.txt" 2>&1
  c1=$(cpu_s "$pid"); o1=$(cpu_s "$other"); t1=$(date +%s.%N)
  echo "$MODE,$phase,$round,$srv,$wl,${rate:-},$load1,$load5,$(echo "$c1 - $c0" | bc),$(echo "$o1 - $o0" | bc),$(echo "$t1 - $t0" | bc),$(basename "$report")" >> "$META"
  echo "$(date +%T) $phase r$round $srv $wl rate=${rate:-max} load=$load1 -> $(python3 "$HERE/summarize.py" --one "$report")"
}

# --- schema and load (the load also warms both servers) ---------------------
for srv in strata cassandra; do
  "$LATTE" schema "$HERE/kv.rn" 127.0.0.1:"$(port_of "$srv")" -P rows="$ROWS" > "$OUT/schema-$srv.txt" 2>&1
  read -r load1 _ < /proc/loadavg
  t0=$(date +%s.%N); c0=$(cpu_s "$(pid_of "$srv")")
  "$LATTE" load "$HERE/kv.rn" 127.0.0.1:"$(port_of "$srv")" -P rows="$ROWS" \
    --concurrency "$CONCURRENCY" "${CLIENT[@]}" -q > "$OUT/load-$srv.txt" 2>&1
  t1=$(date +%s.%N); c1=$(cpu_s "$(pid_of "$srv")")
  echo "$MODE,load,0,$srv,load,,$load1,,$(echo "$c1 - $c0" | bc),,$(echo "$t1 - $t0" | bc)," >> "$META"
  echo "$(date +%T) loaded $ROWS rows into $srv in $(echo "$t1 - $t0" | bc) s (load $load1)"
done
for srv in strata cassandra; do
  for wl in $WORKLOADS; do measure warmup 0 "$srv" "$wl" "" "$WARMUP_RUN"; done
done

# --- saturation rounds -------------------------------------------------------
for r in $(seq 1 "$ROUNDS"); do
  for srv in strata cassandra; do
    for wl in $WORKLOADS; do measure saturation "$r" "$srv" "$wl" "" "$DURATION"; done
  done
done

# --- fixed-rate rounds, the same rate for both servers -----------------------
declare -A RATE
for wl in $WORKLOADS; do
  RATE[$wl]="${FIXED_RATE:-$(python3 "$HERE/summarize.py" --fixed-rate "$META" "$wl" "$FIXED_FRACTION")}"
done
for r in $(seq 1 "$ROUNDS"); do
  for srv in strata cassandra; do
    for wl in $WORKLOADS; do measure fixed "$r" "$srv" "$wl" "${RATE[$wl]}" "$DURATION"; done
  done
done

du -sb "$WORK/strata-$MODE" "$WORK/cassandra/data/data" >> "$OUT/environment.txt" || true
python3 "$HERE/summarize.py" --table "$META" > "$OUT/summary.md"
cat "$OUT/summary.md"
python3 "$HERE/summarize.py" --csv "$META" > "$OUT/results.csv"
# latte's reports, kept compressed, less the per-second histograms (see summarize.py).
python3 "$HERE/summarize.py" --slim "$OUT"/*.json
gzip -9f "$OUT"/*.json "$OUT"/*-r[0-9]-*.txt "$OUT"/load-*.txt "$OUT"/schema-*.txt
