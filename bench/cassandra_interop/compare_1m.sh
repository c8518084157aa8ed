#!/bin/bash
# Every value and writetime of ROWS (default 1M) `strata stress` rows read
# from Strata and from Cassandra 5.0.9 (127.0.0.1:9042, NODETOOL its
# nodetool.sh) after `strata export` and `nodetool import -e`, compared as
# both scans stream in token order. PYTHON: a python with cassandra-driver.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$HERE/../.."
S="${STRATA:-$ROOT/target/release/strata}"; N="${NODETOOL:-$ROOT/../shared/cassandra/nodetool.sh}"; PY="${PYTHON:-python3}"
H="$ROOT/crates/strata-cli/tests/drivers/cassandra_roundtrip.py"; W="${WORK:-$(mktemp -d)}"
n=${ROWS:-1000000}; port=${PORT:-19142}
d=$W/cmp_src; o=$W/cmp_nb
rm -rf "$d" "$o"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$S" --data-dir "$d" stress write -n "$n" > /dev/null
"$S" --data-dir "$d" export stress.standard1 --format cassandra --out "$o" > /dev/null
echo "DROP KEYSPACE IF EXISTS stress;" > "$W/drop.cql"
$PY "$H" run 9042 "$W/drop.cql" > /dev/null
$PY "$H" run 9042 "$o/stress/standard1/schema.cql" > /dev/null
"$N" import -e stress standard1 "$o/stress/standard1" > /dev/null
"$S" --data-dir "$d" serve --port "$port" > "$W/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 1; done
t0=$(date +%s)
$PY "$H" compare-in-order 9042 "127.0.0.1:$port" stress standard1
echo "compared in $(( $(date +%s) - t0 )) s"
$PY "$H" run 9042 "$W/drop.cql" > /dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "${KEEP:-}" ] || rm -rf "$d" "$o"
