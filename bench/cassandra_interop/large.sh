#!/bin/bash
# A 10 GiB table with one 2 GiB partition, exported to Cassandra's format and
# imported back into an empty data directory: time and peak memory of each
# direction, and every block of the copy verified by its CRC-32C.
#
# The table is the blob workload's `stress.blocks` (1 MiB rows): file 0 is one
# partition of 2 GiB (2048 rows), files 1..512 are 16 MiB each. Both runs use
# the same seed, so file 0's first 16 blocks, written again by the second run,
# keep their content. Needs about 35 GiB free under WORK.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$HERE/../.."
S="${STRATA:-$ROOT/target/release/strata}"; W="${WORK:-$(mktemp -d)}"
d=$W/large_src; o=$W/large_nb; i=$W/large_copy
rm -rf "$d" "$o" "$i"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$(date +%s)
"$S" --data-dir "$d" stress write --workload blob -n 1 --file-size-kib 2097152 --seed 41 > /dev/null
"$S" --data-dir "$d" stress write --workload blob -n 513 --file-size-kib 16384 --seed 41 > /dev/null
"$S" --data-dir "$d" flush > /dev/null
t1=$(date +%s)
echo "written in $((t1 - t0)) s: $(du -sm "$d" | cut -f1) MiB on disk"
/usr/bin/time -f "%e %M" -o "$W/t_exp" "$S" --data-dir "$d" export stress.blocks --format cassandra --out "$o" --json > "$W/export.json"
read es erss < "$W/t_exp"
nb=$(du -sm "$o/stress/blocks" | cut -f1)
/usr/bin/time -f "%e %M" -o "$W/t_imp" "$S" --data-dir "$i" import --from-cassandra "$o/stress/blocks" stress.blocks --json > "$W/import.json"
read is irss < "$W/t_imp"
echo "| direction | data | seconds | MB/s | peak RSS MiB |"
echo "|---|---|---|---|---|"
printf "| export (Strata -> nb) | %s MiB nb | %s | %.0f | %s |\n" "$nb" "$es" "$(echo "$nb / $es" | bc -l)" $((erss / 1024))
printf "| import (nb -> Strata) | %s MiB nb | %s | %.0f | %s |\n" "$nb" "$is" "$(echo "$nb / $is" | bc -l)" $((irss / 1024))
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("imported: %d partitions, %d rows, %d cells" % (d["partitions"], d["rows"], d["cells"]))' "$W/import.json"
# Every block of the copy: the 2 GiB file, then the 512 others.
check='Total (partitions|rows)|Failed operations|wrong values|not found'
"$S" --data-dir "$i" stress read --workload blob -n 1 --file-size-kib 2097152 --seed 41 | grep -E "$check"
"$S" --data-dir "$i" stress read --workload blob -n 513 --file-size-kib 16384 --seed 41 | grep -E "$check"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${KEEP:-}" ] || rm -rf "$d" "$o" "$i"
