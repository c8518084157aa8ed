#!/usr/bin/env bash
# A private Cassandra 5.0.9 for the side-by-side run: the jars, JVM flags and
# cassandra.yaml of ../shared/cassandra (see its README), with its own state
# directory and ports so that it neither shares data with nor stops a node
# someone else started from the shared scripts.
#
#   cassandra.sh start periodic|group   start, wait for CQL, print the pid
#   cassandra.sh stop                   stop by the recorded pid only
#   cassandra.sh pid
#
# Environment: SHARED (default /work/shared/cassandra), CASSANDRA_LIB (default
# /tmp/cassandra/lib), HEAP (default 4G, the shared script's default),
# RUN (default /tmp/loadbench/cassandra), CQL_PORT (default 9142).
set -euo pipefail
SHARED="${SHARED:-/work/shared/cassandra}"
LIB="${CASSANDRA_LIB:-/tmp/cassandra/lib}"
HEAP="${HEAP:-4G}"
RUN="${RUN:-/tmp/loadbench/cassandra}"
CQL_PORT="${CQL_PORT:-9142}"
JMX_PORT=7299
PIDFILE="$RUN/cassandra.pid"

conf() { # $1 = periodic | group
  mkdir -p "$RUN/conf" "$RUN/data" "$RUN/logs"
  cp "$SHARED/conf/logback.xml" "$RUN/conf/"
  # Same file as the shared one, paths and ports moved; the commit-log mode is
  # the only setting changed, and only for `group`.
  sed -e "s#/tmp/cassandra/data#$RUN/data#g" \
      -e "s#^native_transport_port: .*#native_transport_port: $CQL_PORT#" \
      -e "s#^storage_port: .*#storage_port: 7100#" \
      -e "s#^ssl_storage_port: .*#ssl_storage_port: 7101#" \
      -e "s#127.0.0.1:7000#127.0.0.1:7100#" \
      "$SHARED/conf/cassandra.yaml" > "$RUN/conf/cassandra.yaml"
  case "$1" in
    periodic) ;; # the shared file: periodic, 10000ms
    group)
      sed -i -e 's#^commitlog_sync: .*#commitlog_sync: group#' \
             -e 's#^commitlog_sync_period: .*#commitlog_sync_group_window: 10ms#' \
             "$RUN/conf/cassandra.yaml" ;;
    *) echo "mode must be periodic or group" >&2; exit 2 ;;
  esac
  grep -E '^commitlog_sync' "$RUN/conf/cassandra.yaml" >&2
}

case "${1:-}" in
  start)
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      echo "already running: pid $(cat "$PIDFILE")" >&2; exit 1
    fi
    conf "${2:-periodic}"
    [ -f "$LIB/cassandra-all-5.0.9.jar" ] || \
      mvn -q -B -f "$SHARED/pom.xml" dependency:copy-dependencies -DoutputDirectory="$LIB" -DincludeScope=runtime
    mapfile -t JVM_OPTS < <(grep -E '^-' "$SHARED/jvm-options.txt" | tr ' ' '\n')
    JAMM="$(ls "$LIB"/jamm-*.jar | head -1)"
    nohup java -Xms"$HEAP" -Xmx"$HEAP" "${JVM_OPTS[@]}" \
      -javaagent:"$JAMM" \
      -Dcassandra.config="file://$RUN/conf/cassandra.yaml" \
      -Dlogback.configurationFile="$RUN/conf/logback.xml" \
      -Dcassandra.logdir="$RUN/logs" \
      -Dcassandra.storagedir="$RUN/data" \
      -Dcassandra.jmx.local.port=$JMX_PORT \
      -Dcassandra-foreground=yes \
      -cp "$RUN/conf:$LIB/*" \
      org.apache.cassandra.service.CassandraDaemon > "$RUN/logs/stdout.log" 2>&1 &
    echo $! > "$PIDFILE"
    for i in $(seq 1 240); do
      if (exec 3<>/dev/tcp/127.0.0.1/$CQL_PORT) 2>/dev/null; then
        echo "cassandra pid $(cat "$PIDFILE"), CQL up after ${i}s" >&2; cat "$PIDFILE"; exit 0
      fi
      kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { tail -30 "$RUN/logs/stdout.log" >&2; exit 1; }
      sleep 1
    done
    echo "timed out waiting for CQL" >&2; exit 1 ;;
  stop)
    [ -f "$PIDFILE" ] || { echo "no pid file" >&2; exit 0; }
    PID="$(cat "$PIDFILE")"
    if kill -0 "$PID" 2>/dev/null; then
      kill "$PID"
      for i in $(seq 1 60); do kill -0 "$PID" 2>/dev/null || break; sleep 1; done
      kill -0 "$PID" 2>/dev/null && kill -9 "$PID"
    fi
    rm -f "$PIDFILE"; echo "stopped cassandra $PID" >&2 ;;
  pid) cat "$PIDFILE" ;;
  *) echo "usage: $0 start periodic|group | stop | pid" >&2; exit 2 ;;
esac
