#!/usr/bin/env bash
# Runs the whole test suite N times in a row with two CPU-bound processes
# beside it: the check that no test depends on the scheduler or the clock's
# speed. Stops at the first failing run and names its log.
#
# Usage: bench/suite_under_load/run.sh [RUNS (default 5)] [LOG_DIR (default /tmp/suite_under_load)]
set -u
runs=${1:-5}
logs=${2:-/tmp/suite_under_load}
mkdir -p "$logs"
cd "$(dirname "$0")/../.." || exit 1

# Build first, without the load, so each run measures the tests alone.
if ! cargo test --workspace --release --no-run > "$logs/build.log" 2>&1; then
    echo "build failed: $logs/build.log"
    exit 1
fi

busy() { while :; do :; done; }
busy & hog1=$!
busy & hog2=$!
trap 'kill $hog1 $hog2 2>/dev/null' EXIT

for i in $(seq 1 "$runs"); do
    start=$(date +%s)
    cargo test --workspace --release --no-fail-fast > "$logs/run$i.log" 2>&1
    rc=$?
    read -r passed failed < <(grep "^test result" "$logs/run$i.log" |
        awk '{p += $4; f += $6} END {print p + 0, f + 0}')
    echo "run $i: exit $rc, $passed passed, $failed failed, $(( $(date +%s) - start )) s," \
        "load $(cut -d' ' -f1-3 /proc/loadavg)"
    if [ "$rc" -ne 0 ]; then
        echo "run $i failed: $logs/run$i.log"
        exit 1
    fi
done
echo "$runs runs in a row passed beside two CPU-bound processes"
