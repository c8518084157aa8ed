#!/usr/bin/env python3
"""Runs the statement corpus against a node and records every answer.

    .venv/bin/python tools/record.py                      # -> ../statements.jsonl
    .venv/bin/python tools/record.py --datamodel          # -> ../statements_datamodel.jsonl
    .venv/bin/python tools/record.py --out /tmp/x.jsonl   # elsewhere (to compare two runs)

Connects with the Python driver to 127.0.0.1:9042, protocol v5, consistency ONE, and
runs the statements one at a time, in order, on one session. Before the run it drops
the keyspaces the corpus uses (outside the record), so every run starts from the same
state and the output is the same byte for byte.

One JSON object per line:
  {"cql": ..., "values": [...], "bind_types": [[name, type], ...], "pk_indexes": [..],
   "page_size": N,
   "result": {"kind": "rows", "columns": [[name, type], ...], "rows": [[...], ...],
              "paging_state_present": false, "warnings": [...]}}
  {"cql": ..., "error": {"code": "0x2200", "class": "InvalidRequest", "message": ...}}

- "values" present: the statement was prepared and executed with those values (encoded
  as in golden_common.py; {"unset": true} is an unset value). "raw_values" instead: the
  bound values were sent as these exact bytes ("0x" hex, null for a null, {"unset": true}
  for an unset value), bypassing the driver's serialization and its own checks, to
  record the server's answer to malformed values.
- "bind_types" and "pk_indexes" are the PREPARED answer's bind metadata: each marker's
  name and type, and which markers hold the partition key columns, in key order.
- "page_size": N: read with that page size; the result then has "pages", one object per
  page with its rows and paging_state_present, instead of "rows". page_size 0: paging
  off. Without page_size the driver's default (5000) is used and only the first page is
  recorded (paging_state_present says whether there was more).
- "batch": a protocol BATCH message (not CQL text) of prepared statements with values;
  "batch_type" LOGGED, UNLOGGED or COUNTER.
- kind "schema_change" carries "change" (change_type, target_type, keyspace, name).
- A value that depends on the clock (now(), ttl() of a live cell, a random uuid) is
  written "<time>" in the rows; a test treats "<time>" as matching any value.
- An error that lists a function's type signatures ("known type signatures: ...") has
  the list sorted: the server prints it in hash order, which changes between node starts.
- The types are as the driver prints them: a text column is reported as "varchar"
  (the protocol has one type id for both).

Phase directives. A line with "directive" instead of "cql" is an action on the node,
not a statement; it has no result. A replaying test does the same to its own engine:
  {"directive": "flush", "keyspace": "ks"}    nodetool flush ks: every memtable of the
                                              keyspace written to an sstable
  {"directive": "compact", "keyspace": "ks"}  nodetool compact ks: a major compaction of
                                              every table of the keyspace (one sstable)
  {"directive": "restart", "keyspace": "ks"}  kill -9 of the node (no drain, no flush:
                                              the commit log is replayed at start), start
                                              it again, wait for CQL, open a new session
                                              and USE ks (the keyspace of the last USE;
                                              null if there was none)
  {"directive": "sleep", "seconds": N}        wait N seconds (lets a TTL expire)
Statements that read the same data in several phases carry "group" and "phase" (for
instance "group": "A", "phase": "memtable" / "restart" / "flush" / "compact"): within a
group, a SELECT has the same result in every phase (record.py checks it and says so).
The node is stopped and started with the scripts of shared/cassandra (--cassandra-dir);
its conf has commitlog_sync: periodic (fsync every commitlog_sync_period, 10 s), which
acknowledges a write before it is on disk and writes the sync marker that makes a commit
log section replayable only at the next sync, so before the kill the recorder waits the
period plus 5 s (the conf cannot be changed per run; batch/group would not need the wait).
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from golden_common import ERROR_CLASSES, encode, type_text  # noqa: E402

from cassandra import ConsistencyLevel  # noqa: E402
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, ResponseFuture  # noqa: E402
from cassandra.protocol import ErrorMessage, ResultMessage  # noqa: E402
from cassandra.policies import FallthroughRetryPolicy  # noqa: E402
from cassandra.query import (UNSET_VALUE, BatchStatement, BatchType, BoundStatement,  # noqa: E402
                             SimpleStatement, tuple_factory)

import corpus  # noqa: E402

# The last response the driver decoded for a request of this session. The recorder runs
# one request at a time, so the last one is the answer to the current request.
LAST = {"response": None}
_orig_set_result = ResponseFuture._set_result


def _recording_set_result(self, host, connection, pool, response):
    LAST["response"] = response
    return _orig_set_result(self, host, connection, pool, response)


ResponseFuture._set_result = _recording_set_result


SIGNATURES = re.compile(r"\(known type signatures: (.*)\)$")


def stable_message(message):
    """Sorts the function signatures an error lists: the server lists them in hash order,
    which changes from one node start to the next."""
    m = SIGNATURES.search(message)
    if not m:
        return message
    sigs = sorted(re.split(r", (?=\w+\.\w+ : )", m.group(1)))
    return message[:m.start(1)] + ", ".join(sigs) + message[m.end(1):]


def error_of(exc):
    r = LAST["response"]
    if isinstance(r, ErrorMessage):
        return {"code": "0x%04x" % r.code, "class": ERROR_CLASSES.get(r.code, "0x%04x" % r.code),
                "message": stable_message(r.message)}
    return {"client_error": type(exc).__name__, "message": str(exc)}


def raw_value(v):
    if v is None:
        return None
    if isinstance(v, dict):
        return UNSET_VALUE
    return bytes.fromhex(v[2:])


def rows_of(rows, names, mask):
    out = []
    for r in rows:
        out.append(["<time>" if n in mask else encode(v) for n, v in zip(names, r)])
    return out


def result_of(rs, mask):
    r = LAST["response"]
    warnings = list(rs.response_future.warnings or [])
    if not isinstance(r, ResultMessage):
        return {"kind": "unknown", "type": type(r).__name__}
    if r.kind == 1:
        res = {"kind": "void"}
    elif r.kind == 3:
        res = {"kind": "set_keyspace", "keyspace": r.new_keyspace}
    elif r.kind == 5:
        ev = dict(r.schema_change_event)
        res = {"kind": "schema_change", "change": {k: ev[k] for k in sorted(ev)}}
    elif r.kind == 2:
        names = list(r.column_names)
        res = {"kind": "rows", "columns": [[n, type_text(t)] for n, t in zip(names, r.column_types)],
               "rows": rows_of(rs.current_rows, names, mask),
               "paging_state_present": r.paging_state is not None}
    else:
        res = {"kind": str(r.kind)}
    if warnings:
        res["warnings"] = warnings
    return res


def paged_result_of(rs, mask):
    first = result_of(rs, mask)
    if first.get("kind") != "rows":
        return first
    pages = [{"rows": first.pop("rows"), "paging_state_present": first.pop("paging_state_present")}]
    while rs.has_more_pages:
        rs.fetch_next_page()
        r = LAST["response"]
        pages.append({"rows": rows_of(rs.current_rows, list(r.column_names or []), mask),
                      "paging_state_present": r.paging_state is not None})
    first["pages"] = pages
    return first


def run_entry(session, e):
    out = {"cql": e["cql"]}
    mask = set(e.get("mask", []))
    page_size = e.get("page_size")
    fetch = None if page_size == 0 else page_size
    LAST["response"] = None
    try:
        if "batch" in e:
            kind = {"LOGGED": BatchType.LOGGED, "UNLOGGED": BatchType.UNLOGGED,
                    "COUNTER": BatchType.COUNTER}[e.get("batch_type", "LOGGED")]
            b = BatchStatement(batch_type=kind)
            out["batch"] = []
            for cql, vals in e["batch"]:
                b.add(session.prepare(cql), vals)
                out["batch"].append({"cql": cql, "values": [encode(v) for v in vals]})
            out["batch_type"] = e.get("batch_type", "LOGGED")
            del out["cql"]
            LAST["response"] = None
            rs = session.execute(b)
        elif "values" in e or "raw_values" in e:
            try:
                prepared = session.prepare(e["cql"])
            except Exception as exc:  # a statement that does not prepare
                if "values" in e:
                    out["values"] = [encode(v) for v in e["values"]]
                out["error"] = dict(error_of(exc), at="prepare")
                return out
            out["bind_types"] = [[c.name, type_text(c.type)] for c in prepared.column_metadata]
            if prepared.routing_key_indexes is not None:
                out["pk_indexes"] = list(prepared.routing_key_indexes)
            if "raw_values" in e:
                out["raw_values"] = e["raw_values"]
                bound = BoundStatement(prepared)
                bound.values = [raw_value(v) for v in e["raw_values"]]
                # The driver would hash the values for routing, and refuses an unset key;
                # one node owns every token, so any routing key will do.
                bound._routing_key = b"\x00"
            else:
                out["values"] = [encode(v) for v in e["values"]]
                bound = prepared.bind(e["values"])
            if fetch is not None or page_size == 0:
                bound.fetch_size = fetch
            LAST["response"] = None
            rs = session.execute(bound)
        else:
            st = SimpleStatement(e["cql"])
            if fetch is not None or page_size == 0:
                st.fetch_size = fetch
            rs = session.execute(st)
        if page_size is not None:
            out["page_size"] = page_size
            out["result"] = paged_result_of(rs, mask)
        else:
            out["result"] = result_of(rs, mask)
    except Exception as exc:
        if page_size is not None:
            out["page_size"] = page_size
        out["error"] = error_of(exc)
    return out


DEFAULT_CASSANDRA_DIR = os.path.normpath(os.path.join(HERE, *[".."] * 7, "shared", "cassandra"))
PID_FILE = "/tmp/cassandra/cassandra.pid"


class Node:
    """The node and the session on it: connects, and carries out the directives."""

    def __init__(self, cassandra_dir):
        self.dir = cassandra_dir
        self.keyspace = None
        self.cluster = self.session = None
        self.connect()

    def connect(self):
        profile = ExecutionProfile(consistency_level=ConsistencyLevel.ONE, row_factory=tuple_factory,
                                   request_timeout=120, retry_policy=FallthroughRetryPolicy())
        for attempt in range(60):
            try:
                self.cluster = Cluster(["127.0.0.1"], protocol_version=5,
                                       execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                                       max_schema_agreement_wait=60)
                self.session = self.cluster.connect()
                return
            except Exception as exc:  # the port may answer before the node serves
                if attempt == 59:
                    raise
                print("connect: %s; retrying" % exc, file=sys.stderr)
                self.cluster.shutdown()
                time.sleep(2)

    def nodetool(self, *args):
        t0 = time.time()
        subprocess.run([os.path.join(self.dir, "nodetool.sh")] + list(args), check=True,
                       stdout=subprocess.DEVNULL)
        print("nodetool %s: %.1fs" % (" ".join(args), time.time() - t0), file=sys.stderr)

    def commitlog_wait(self):
        """Seconds to wait after the last write before a kill -9 loses nothing acknowledged."""
        conf = open(os.path.join(self.dir, "conf", "cassandra.yaml")).read()
        mode = re.search(r"^commitlog_sync:\s*(\w+)", conf, re.M)
        if mode and mode.group(1) != "periodic":
            return 0.0
        period = re.search(r"^commitlog_sync_period(?:_in_ms)?:\s*(\d+)\s*(ms|s)?", conf, re.M)
        secs = 10.0 if not period else int(period.group(1)) / (1000.0 if period.group(2) != "s" else 1.0)
        return secs + 5.0

    def restart(self):
        time.sleep(self.commitlog_wait())
        self.cluster.shutdown()
        pid = int(open(PID_FILE).read().strip())
        os.kill(pid, signal.SIGKILL)
        for _ in range(120):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.5)
        t0 = time.time()
        subprocess.run([os.path.join(self.dir, "start.sh")], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, HEAP=os.environ.get("HEAP", "2G")))
        log = open("/tmp/cassandra/logs/system.log", errors="replace").read()
        replay = re.findall(r"Log replay complete, (\d+) replayed mutations", log)
        print("restart: CQL after %.0fs, %s mutations replayed" % (time.time() - t0, replay[-1:]),
              file=sys.stderr)
        self.connect()
        if self.keyspace:
            self.session.execute("USE %s" % self.keyspace)

    def directive(self, e):
        d = e["directive"]
        if d == "flush":
            self.nodetool("flush", e["keyspace"])
        elif d == "compact":
            self.nodetool("compact", e["keyspace"])
        elif d == "restart":
            self.restart()
            return {"directive": d, "keyspace": self.keyspace}
        elif d == "sleep":
            time.sleep(e["seconds"])
        else:
            raise ValueError("unknown directive %r" % d)
        return dict(e)


def check_phases(records):
    """Every SELECT of a group should answer the same in every phase; lists those that do not."""
    seen, bad = {}, []
    for r in records:
        if "group" not in r:
            continue
        key = (r["group"], r.get("cql"), json.dumps(r.get("values")))
        ans = json.dumps(r.get("result", r.get("error")), sort_keys=True)
        if key in seen and seen[key][1] != ans:
            bad.append("%s %s: %s differs from %s" % (r["group"], r.get("cql"), r["phase"], seen[key][0]))
        seen.setdefault(key, (r["phase"], ans))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datamodel", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--cassandra-dir", default=os.environ.get("CASSANDRA_DIR", DEFAULT_CASSANDRA_DIR),
                    help="shared/cassandra: start.sh, nodetool.sh, conf (for the directives)")
    args = ap.parse_args()
    entries, keyspaces = (corpus.datamodel() if args.datamodel else corpus.scalar())
    default_out = "statements_datamodel.jsonl" if args.datamodel else "statements.jsonl"
    out_path = args.out or os.path.join(HERE, "..", default_out)
    node = Node(args.cassandra_dir)
    for ks in keyspaces:
        node.session.execute("DROP KEYSPACE IF EXISTS %s" % ks)
    n_err = n_dir = 0
    records = []
    with open(out_path, "w") as f:
        for e in entries:
            if "directive" in e:
                rec = node.directive(e)
                n_dir += 1
            else:
                rec = run_entry(node.session, e)
                n_err += "error" in rec
                if rec.get("error", {}).get("client_error") == "NoHostAvailable":
                    sys.exit("lost the node at %r: %s" % (e.get("cql"), rec["error"]["message"]))
                if rec.get("result", {}).get("kind") == "set_keyspace":
                    node.keyspace = rec["result"]["keyspace"]
                for k in ("group", "phase"):
                    if k in e:
                        rec[k] = e[k]
            records.append(rec)
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    for ks in keyspaces:
        node.session.execute("DROP KEYSPACE IF EXISTS %s" % ks)
    node.cluster.shutdown()
    for line in check_phases(records):
        print("phase mismatch: " + line, file=sys.stderr)
    print("%d entries (%d directives), %d errors -> %s" % (len(entries), n_dir, n_err, out_path))


if __name__ == "__main__":
    main()
