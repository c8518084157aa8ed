#!/usr/bin/env python3
"""Records what each client sends on connect, into ../connect_queries.json.

Runs cqlproxy's relay in-process on 127.0.0.1:9043 -> 9042, runs each client against
9043 in turn, and writes every request each connection sent, in order, with the
server's answer in short (result kind, columns, row count, error).

    .venv/bin/python tools/capture.py [--only NAME] [--out ../connect_queries.json]

Needs the node on 9042 and, in the same venv, cassandra-driver and cqlsh. The Java
and Rust clients are run only when their build exists (see README.md); otherwise
the existing entry in the output file is kept.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cqlproxy  # noqa: E402

VENV_BIN = os.path.dirname(sys.executable)
PY_CLIENT = r"""
import sys
from cassandra.cluster import Cluster
kw = {} if len(sys.argv) < 2 else {"protocol_version": int(sys.argv[1])}
cluster = Cluster(["127.0.0.1"], port=9043, **kw)
session = cluster.connect()
print("protocol", cluster.protocol_version)
session.execute("CREATE KEYSPACE capture WITH replication = "
                "{'class': 'SimpleStrategy', 'replication_factor': 1}")
session.execute("CREATE TABLE capture.t (k int PRIMARY KEY, v text)")
cluster.refresh_schema_metadata()
cluster.shutdown()
"""

JAVA_DIR = os.path.join(HERE, "java")
RUST_BIN = os.environ.get("SCYLLA_CAPTURE_BIN", "/tmp/golden/scylla-capture/target/release/scylla-capture")


def clients():
    py = os.path.join(VENV_BIN, "python")
    cqlsh = os.path.join(VENV_BIN, "cqlsh")
    out = [
        ("python-driver", "Cluster(['127.0.0.1']).connect(); CREATE KEYSPACE; CREATE TABLE; "
         "cluster.refresh_schema_metadata()", [py, "-c", PY_CLIENT]),
        ("python-driver-protocol-v4", "as python-driver, with Cluster(protocol_version=4)",
         [py, "-c", PY_CLIENT, "4"]),
        ("cqlsh-select-release-version", "cqlsh 127.0.0.1 9043 -e \"SELECT release_version FROM system.local\"",
         [cqlsh, "127.0.0.1", "9043", "-e", "SELECT release_version FROM system.local"]),
        ("cqlsh-describe-keyspaces", "cqlsh 127.0.0.1 9043 -e \"DESCRIBE KEYSPACES\"",
         [cqlsh, "127.0.0.1", "9043", "-e", "DESCRIBE KEYSPACES"]),
    ]
    cp_file = os.path.join(JAVA_DIR, "target", "classpath.txt")
    if os.path.exists(cp_file):
        cp = open(cp_file).read().strip() + ":" + os.path.join(JAVA_DIR, "target", "classes")
        out.append(("java-driver-4", "CqlSession.builder().addContactPoint(127.0.0.1:9043)"
                    ".withLocalDatacenter(\"datacenter1\").build(); CREATE KEYSPACE; CREATE TABLE; "
                    "SELECT release_version FROM system.local",
                    ["java", "-cp", cp, "Capture"]))
    if os.path.exists(RUST_BIN):
        out.append(("rust-scylla", "SessionBuilder::new().known_node(\"127.0.0.1:9043\").build(); "
                    "CREATE KEYSPACE; CREATE TABLE; await_schema_agreement; refresh_metadata; "
                    "SELECT release_version FROM system.local", [RUST_BIN]))
    return out


class Recorder:
    def __init__(self):
        self.lock = threading.Lock()
        self.entries = []

    def log(self, entry):
        with self.lock:
            self.entries.append(entry)

    def take(self):
        with self.lock:
            out, self.entries = self.entries, []
        return out


def serve(recorder, port, upstream):
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(16)
    while True:
        client, _ = srv.accept()
        up = socket.create_connection(("127.0.0.1", upstream))
        conn = cqlproxy.Conn(recorder.log)
        recorder.log({"conn": conn.id, "event": "accepted"})
        for a, b, d in ((client, up, "c2s"), (up, client, "s2c")):
            threading.Thread(target=cqlproxy.relay, args=(a, b, cqlproxy.Decoder(conn, d)),
                             daemon=True).start()


def normalize(body):
    """Drops what changes from run to run (client timestamps, paging states)."""
    out = dict(body)
    if "timestamp" in out:
        out["timestamp"] = "<time>"
    if "paging_state" in out:
        out["paging_state"] = "<paging_state>"
    for key in ("CLIENT_ID", "SESSION_ID"):  # random per session (Java, Rust drivers)
        if key in out:
            out[key] = "<uuid>"
    return out


def summarize(entries):
    conns = {}
    order = []
    for e in entries:
        if "event" in e and "dir" not in e:
            c = {"connection": len(order) + 1, "exchanges": [], "_pending": {}}
            conns[e["conn"]] = c
            order.append(c)
            continue
        c = conns[e["conn"]]
        if e["dir"] == "c2s":
            x = {"request": {"version": e["version"], "opcode": e["opcode"], **normalize(e.get("body", {}))}}
            if "decode_error" in e:
                x["request"]["decode_error"] = e["decode_error"]
            c["exchanges"].append(x)
            c["_pending"][e["stream"]] = x
        elif e["stream"] < 0 or e["opcode"] == "EVENT":
            c["exchanges"].append({"event": {"version": e["version"], **e.get("body", {})}})
        else:
            x = c["_pending"].pop(e["stream"], None)
            resp = {"version": e["version"], "opcode": e["opcode"], **e.get("body", {})}
            if e.get("warnings"):
                resp["warnings"] = e["warnings"]
            if x is None:
                c["exchanges"].append({"response": resp})
            else:
                x["response"] = resp
    for c in order:
        del c["_pending"]
        startups = [x["request"]["version"] for x in c["exchanges"]
                    if x.get("request", {}).get("opcode") == "STARTUP"]
        c["protocol_version"] = startups[0] if startups else None
    return order


def dump(doc):
    """JSON with one line per exchange, so a diff shows one request per line."""
    lines = ["{"]
    for ci, (name, client) in enumerate(doc.items()):
        lines.append("  %s: {" % json.dumps(name))
        lines.append("    \"command\": %s," % json.dumps(client["command"]))
        lines.append("    \"protocol_version\": %s," % json.dumps(client["protocol_version"]))
        lines.append("    \"connections\": [")
        for ki, conn in enumerate(client["connections"]):
            lines.append("      {\"connection\": %d, \"protocol_version\": %s, \"exchanges\": [" %
                         (conn["connection"], json.dumps(conn["protocol_version"])))
            for xi, x in enumerate(conn["exchanges"]):
                sep = "," if xi + 1 < len(conn["exchanges"]) else ""
                lines.append("        " + json.dumps(x, sort_keys=False) + sep)
            lines.append("      ]}" + ("," if ki + 1 < len(client["connections"]) else ""))
        lines.append("    ]")
        lines.append("  }" + ("," if ci + 1 < len(doc) else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "connect_queries.json"))
    ap.add_argument("--only")
    ap.add_argument("--port", type=int, default=9043)
    args = ap.parse_args()
    doc = {}
    if os.path.exists(args.out):
        doc = json.load(open(args.out))
    recorder = Recorder()
    threading.Thread(target=serve, args=(recorder, args.port, 9042), daemon=True).start()
    time.sleep(0.3)
    from cassandra.cluster import Cluster
    direct = Cluster(["127.0.0.1"], port=9042)
    setup = direct.connect()
    for name, command, argv in clients():
        if args.only and name != args.only:
            continue
        setup.execute("DROP KEYSPACE IF EXISTS capture")
        cqlproxy.Conn.ids = iter(range(1, 1 << 30))
        recorder.take()
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            print(name, "failed:", proc.stdout, proc.stderr, file=sys.stderr)
            sys.exit(1)
        time.sleep(1.0)  # trailing answers and events after the client closed
        conns = summarize(recorder.take())
        versions = [c["protocol_version"] for c in conns if c["protocol_version"] is not None]
        doc[name] = {"command": command, "protocol_version": versions[-1] if versions else None,
                     "connections": conns}
        print(name, "connections", len(conns), "settled on v%s" % doc[name]["protocol_version"])
    setup.execute("DROP KEYSPACE IF EXISTS capture")
    direct.shutdown()
    with open(args.out, "w") as f:
        f.write(dump(doc))


if __name__ == "__main__":
    main()
