#!/usr/bin/env bash
# Installs the pinned cqlsh and the pinned cassandra-driver it runs on into a
# virtualenv under the cargo target directory (once; later runs reuse it) and
# prints the path of the venv's cqlsh. Called by the cqlsh test.
set -euo pipefail
VERSION=6.2.2
DRIVER_VERSION=3.30.1
target="${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../../.." && pwd)/target}"
venv="$target/python-cqlsh-$VERSION-driver-$DRIVER_VERSION"
if [ ! -x "$venv/bin/cqlsh" ] || ! "$venv/bin/pip" show cqlsh 2>/dev/null | grep -qx "Version: $VERSION"; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    # Pure Python plus the driver's wheel; no build needed.
    "$venv/bin/pip" install --quiet --disable-pip-version-check "cqlsh==$VERSION" "cassandra-driver==$DRIVER_VERSION" >&2
fi
echo "$venv/bin/cqlsh"
