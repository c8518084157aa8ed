#!/bin/bash
# Export / import throughput against data size, one row of the table per
# size: strata export, strata import, and nodetool import -e into a running
# Cassandra 5.0.9 (127.0.0.1:9042, its nodetool.sh in NODETOOL). PYTHON: a
# python with cassandra-driver. Prints the markdown table BENCHMARKS.md holds.
HERE="$(cd "$(dirname "$0")" && pwd)"; ROOT="$HERE/../.."
S="${STRATA:-$ROOT/target/release/strata}"; N="${NODETOOL:-$ROOT/../shared/cassandra/nodetool.sh}"; PY="${PYTHON:-python3}"
H="$ROOT/crates/strata-cli/tests/drivers/cassandra_roundtrip.py"; W="${WORK:-$(mktemp -d)}"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "| rows | data (MiB, Strata sstables) | export s | export MB/s | export peak RSS MiB | nb MiB | strata import s | import peak RSS MiB | nodetool import -e s |\n|---|---|---|---|---|---|---|---|---|\n"
for n in 100000 300000 1000000 3000000; do
  d=$W/bm_$n; o=$W/bmo_$n; i=$W/bmi_$n; rm -rf $d $o $i
  $S --data-dir $d stress write -n $n > /dev/null 2>&1
  $S --data-dir $d flush > /dev/null 2>&1
  size=$(du -sm $d/data 2>/dev/null | cut -f1); [ -z "$size" ] && size=$(du -sm $d | cut -f1)
  /usr/bin/time -f "%e %M" -o $W/t_exp $S --data-dir $d export stress.standard1 --format cassandra --out $o > /dev/null
  read es erss < $W/t_exp
  nb=$(du -sm $o/stress/standard1 | cut -f1)
  /usr/bin/time -f "%e %M" -o $W/t_imp $S --data-dir $i import --from-cassandra $o/stress/standard1 stress.standard1 > /dev/null
  read is irss < $W/t_imp
  ks=bm$n
  sed "s/stress\./$ks./g; s/KEYSPACE IF NOT EXISTS stress /KEYSPACE IF NOT EXISTS $ks /" $o/stress/standard1/schema.cql > $W/schema_$n.cql
  $PY $H run 9042 $W/schema_$n.cql > /dev/null
  t0=$(date +%s.%N); $N import -e $ks standard1 $o/stress/standard1 > /dev/null; t1=$(date +%s.%N)
  ns=$(echo "$t1 - $t0" | bc)
  mbps=$(echo "scale=1; $nb / $es" | bc)
  printf "| %s | %s | %s | %s | %s | %s | %s | %s | %.1f |\n" $n $size $es $mbps $((erss/1024)) $nb $is $((irss/1024)) $ns
  echo "DROP KEYSPACE $ks;" > $W/drop_$n.cql; $PY $H run 9042 $W/drop_$n.cql > /dev/null
  rm -rf $d $o $i
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
