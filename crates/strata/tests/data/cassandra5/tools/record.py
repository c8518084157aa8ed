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
- "batch": a protocol BATCH message (not CQL text) of prepared statements with values.
- kind "schema_change" carries "change" (change_type, target_type, keyspace, name).
- A value that depends on the clock (now(), ttl() of a live cell, a random uuid) is
  written "<time>" in the rows; a test treats "<time>" as matching any value.
- An error that lists a function's type signatures ("known type signatures: ...") has
  the list sorted: the server prints it in hash order, which changes between node starts.
- The types are as the driver prints them: a text column is reported as "varchar"
  (the protocol has one type id for both).
"""

import argparse
import json
import os
import re
import sys

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
            kind = {"LOGGED": BatchType.LOGGED, "UNLOGGED": BatchType.UNLOGGED}[e.get("batch_type", "LOGGED")]
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--datamodel", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    entries, keyspaces = (corpus.datamodel() if args.datamodel else corpus.scalar())
    default_out = "statements_datamodel.jsonl" if args.datamodel else "statements.jsonl"
    out_path = args.out or os.path.join(HERE, "..", default_out)
    profile = ExecutionProfile(consistency_level=ConsistencyLevel.ONE, row_factory=tuple_factory,
                               request_timeout=120, retry_policy=FallthroughRetryPolicy())
    cluster = Cluster(["127.0.0.1"], protocol_version=5, execution_profiles={EXEC_PROFILE_DEFAULT: profile},
                      max_schema_agreement_wait=60)
    session = cluster.connect()
    for ks in keyspaces:
        session.execute("DROP KEYSPACE IF EXISTS %s" % ks)
    n_err = 0
    with open(out_path, "w") as f:
        for e in entries:
            rec = run_entry(session, e)
            n_err += "error" in rec
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    for ks in keyspaces:
        session.execute("DROP KEYSPACE IF EXISTS %s" % ks)
    cluster.shutdown()
    print("%d statements, %d errors -> %s" % (len(entries), n_err, out_path))


if __name__ == "__main__":
    main()
