#!/usr/bin/env bash
# A fixed-rate sweep of `strata stress write`: for each target rate, a timed
# run with latency measured from each operation's intended start (coordinated
# omission corrected), then one table and one SVG chart of p50/p99 against the
# rate asked for and the rate achieved. Below saturation p99 stays flat; past
# it operations queue behind their schedule and p99 grows with the run.
#
#   bench/stress_rate/sweep.sh [OUT_DIR] [RATES] [DURATION] [THREADS]
#   defaults: /tmp/stress_rate "10000 30000 50000 70000 90000 110000 130000 150000" 10s 2
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-/tmp/stress_rate}
rates=${2:-"10000 30000 50000 70000 90000 110000 130000 150000"}
duration=${3:-10s}
threads=${4:-2}
strata="${STRATA_BIN:-$root/target/release/strata}"
[ -x "$strata" ] || cargo build --release -p strata-cli --manifest-path "$root/Cargo.toml"
mkdir -p "$out"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/load.txt"
for r in $rates; do
  dir="$out/data-$r"
  rm -rf "$dir"
  "$strata" --data-dir "$dir" stress write --duration "$duration" --threads "$threads" \
    --rate "fixed=$r/s" --partitions 1000000 --json "$out/rate-$r.json" --no-tablestats \
    > "$out/rate-$r.log"
  rm -rf "$dir"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt"
python3 "$here/chart.py" "$out" $rates
