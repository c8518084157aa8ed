#!/usr/bin/env bash
# Runs one of Cassandra's offline tools from the jars a reference install
# uses (the sstable* scripts of a Cassandra tarball call these classes):
#
#   cassandra_tool.sh CASSANDRA_DIR CLASS ARGS...
#
# CASSANDRA_DIR holds conf/cassandra.yaml and jvm-clients-options.txt;
# CASSANDRA_LIB (default /tmp/cassandra/lib) the jars. CLASS is one of
# SSTableExport (sstabledump), SSTableMetadataViewer (sstablemetadata),
# StandaloneVerifier (sstableverify, which needs the node stopped).
# The tools' own logging goes to stderr at WARN, so stdout is their answer.
set -euo pipefail
DIR="$(cd "$1" && pwd)"
CLASS="$2"
shift 2
LIB="${CASSANDRA_LIB:-/tmp/cassandra/lib}"
mapfile -t OPTS < <(grep -E '^-' "$DIR/jvm-clients-options.txt" | tr ' ' '\n')
LOGCONF="$(mktemp --suffix .xml)"
trap 'rm -f "$LOGCONF"' EXIT
cat > "$LOGCONF" <<'XML'
<configuration>
  <appender name="E" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%level %logger{20} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="E"/></root>
</configuration>
XML
java "${OPTS[@]}" -Xmx512m -cp "$LIB/*" \
  -Dcassandra.config="file://$DIR/conf/cassandra.yaml" \
  -Dcassandra.storagedir=/tmp/cassandra/data \
  -Dlogback.configurationFile="$LOGCONF" \
  "org.apache.cassandra.tools.$CLASS" "$@"
