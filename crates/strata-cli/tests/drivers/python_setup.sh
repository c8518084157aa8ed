#!/usr/bin/env bash
# Installs the pinned Python cassandra-driver into a virtualenv under the
# cargo target directory (once; later runs reuse it) and prints the path of
# the venv's python. Called by the driver tests.
set -euo pipefail
VERSION=3.30.1
target="${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../../../.." && pwd)/target}"
venv="$target/python-cassandra-driver-$VERSION"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import cassandra, sys; sys.exit(cassandra.__version__ != '$VERSION')" 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    # The wheel carries its compiled extensions; no build needed.
    "$venv/bin/pip" install --quiet --disable-pip-version-check "cassandra-driver==$VERSION" >&2
fi
echo "$venv/bin/python"
