#!/usr/bin/env bash
# Builds the Java driver 4.x client (tests/drivers/java: the pinned
# java-driver-core from Maven Central) into the cargo target directory, once
# (later runs reuse it until its sources change), and prints the classpath to
# run it with: `java -cp CLASSPATH strata.JavaDriverClient ...`. Called by the
# Java driver tests.
set -euo pipefail
src="$(cd "$(dirname "$0")/java" && pwd)"
target="${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../../.." && pwd)/target}"
out="$target/java-driver-4.18.1-client"
mkdir -p "$out"
# Test binaries may run at once: one build at a time.
exec 9>"$out/.lock"
flock 9
stamp="$( (cd "$src" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -d' ' -f1)"
if [ ! -f "$out/stamp" ] || [ "$(cat "$out/stamp")" != "$stamp" ] || [ ! -f "$out/build/classpath.txt" ]; then
    rm -rf "$out/build" "$out/stamp"
    # Quiet unless it fails; the build directory is under target/, never next to the sources.
    if ! log="$(mvn -q -B -f "$src/pom.xml" -Dstrata.build.dir="$out/build" \
        compile dependency:build-classpath -Dmdep.outputFile="$out/build/classpath.txt" 2>&1)"; then
        echo "$log" >&2
        exit 1
    fi
    echo "$stamp" > "$out/stamp"
fi
echo "$out/build/classes:$(cat "$out/build/classpath.txt")"
