#!/bin/bash
# sstableloader from a Strata export into a two-node Cassandra 5.0.9 cluster
# on one machine (127.0.0.1 and 127.0.0.2, replication factor 2), then every
# row read back at consistency ALL, for each data size. Node 1 is the
# reference node of ../shared/cassandra (running); node 2 is a copy of its
# scripts with its own data directory, addresses and JMX port, started here
# and stopped at the end. PYTHON: a python with cassandra-driver.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$HERE/../.."
REF="${CASSANDRA_SCRIPTS:-$ROOT/../shared/cassandra}"
S="${STRATA:-$ROOT/target/release/strata}"; PY="${PYTHON:-python3}"
H="$ROOT/crates/strata-cli/tests/drivers/cassandra_roundtrip.py"
W="${WORK:-$(mktemp -d)}"; N2="$W/node2"
LIB="${CASSANDRA_LIB:-/tmp/cassandra/lib}"
cp -r "$REF" "$N2"
sed -i "s#/tmp/cassandra/data#$W/node2-state/data#g; s#^listen_address: 127.0.0.1#listen_address: 127.0.0.2#; s#^rpc_address: 127.0.0.1#rpc_address: 127.0.0.2#" "$N2/conf/cassandra.yaml"
sed -i "s#^RUN=/tmp/cassandra\$#RUN=$W/node2-state#; s#jmx.local.port=7199#jmx.local.port=7200#; s#/dev/tcp/127.0.0.1/9042#/dev/tcp/127.0.0.2/9042#; s#-Dcassandra-foreground=yes#-Dcassandra-foreground=yes -Dcassandra.ring_delay_ms=5000#" "$N2/start.sh"
sed -i "s#^RUN=/tmp/cassandra\$#RUN=$W/node2-state#" "$N2/stop.sh"
# A node 2 left from an earlier run that did not leave the ring: removed,
# or the new one is refused as a duplicate address.
stale=$("$REF/nodetool.sh" status 2>/dev/null | awk '$2 == "127.0.0.2" {print $(NF-1)}')
[ -n "$stale" ] && "$REF/nodetool.sh" removenode "$stale"
HEAP="${HEAP:-1500M}" "$N2/start.sh"
# Node 2 leaves the ring (its data streams back to node 1) before it stops.
sed -i 's#-p 7199#-p 7200#' "$N2/nodetool.sh"
trap '"$N2/nodetool.sh" decommission --force || true; "$N2/stop.sh"' EXIT
OPTS=$(grep -E '^-' "$REF/jvm-clients-options.txt" | tr '\n' ' ')
loader() { java $OPTS -Xmx512m -cp "$LIB/*" -Dcassandra.config="file://$REF/conf/cassandra.yaml" org.apache.cassandra.tools.BulkLoader "$@"; }
cat > "$W/count.py" <<'PYEOF'
import sys
from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster, ExecutionProfile, EXEC_PROFILE_DEFAULT
from cassandra.query import SimpleStatement
p = ExecutionProfile(consistency_level=ConsistencyLevel.ALL, request_timeout=120)
c = Cluster([sys.argv[1]], port=9042, execution_profiles={EXEC_PROFILE_DEFAULT: p}); s = c.connect()
print(sum(1 for _ in s.execute(SimpleStatement("SELECT key FROM %s" % sys.argv[2], fetch_size=5000))))
PYEOF
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "| rows | nb MiB | bytes streamed (both replicas) | loader duration s | loader MiB/s | rows read at CL ALL |\n|---|---|---|---|---|---|\n"
for n in 100000 300000 1000000; do
  d="$W/s$n"; o="$W/o$n"; ks="load$n"
  "$S" --data-dir "$d" stress write -n "$n" > /dev/null 2>&1
  "$S" --data-dir "$d" export stress.standard1 --format cassandra --out "$o" > /dev/null
  sed "s/stress\./$ks./g; s/KEYSPACE IF NOT EXISTS stress WITH replication = {[^}]*}/KEYSPACE IF NOT EXISTS $ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '2'}/" "$o/stress/standard1/schema.cql" > "$W/schema$n.cql"
  "$PY" "$H" run 9042 "$W/schema$n.cql" > /dev/null
  mkdir -p "$W/l$n/$ks"; mv "$o/stress/standard1" "$W/l$n/$ks/standard1"
  nb=$(du -sm "$W/l$n/$ks/standard1" | cut -f1)
  out=$(loader -d 127.0.0.1 "$W/l$n/$ks/standard1" 2>&1)
  bytes=$(echo "$out" | grep "Total bytes transferred" | sed 's/.*: *//; s/ *$//')
  ms=$(echo "$out" | grep "Total duration" | sed 's/.*: *//; s/ ms.*//')
  rate=$(echo "$out" | grep "Average transfer rate" | sed 's/.*: *//; s/MiB\/s.*//')
  rows=$("$PY" "$W/count.py" 127.0.0.2 "$ks.standard1")
  printf "| %s | %s | %s | %.1f | %s | %s |\n" "$n" "$nb" "$bytes" "$(echo "$ms / 1000" | bc -l)" "$rate" "$rows"
  echo "DROP KEYSPACE $ks;" > "$W/drop.cql"; "$PY" "$H" run 9042 "$W/drop.cql" > /dev/null
  rm -rf "$d" "$o" "$W/l$n"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
