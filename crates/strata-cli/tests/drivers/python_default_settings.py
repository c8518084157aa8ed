"""The Python cassandra-driver with default settings against `strata serve`:
version negotiation from the driver's highest (DSE v2, v1, then 5), the full
schema metadata load, then the workload an application runs: schema with
compaction and compression options, prepared writes with TTL and timestamps,
lightweight transactions, row/range/partition deletes, slices in both
orders, 10,000 rows paged, batches. Then it prints "ready for restart" and
waits for a line on stdin: the test restarts the server on the same port
meanwhile, and the same session must reconnect and re-run its prepared
statements (the new server has none: the driver prepares again on 0x2500).

usage: python_default_settings.py HOST PORT [--user U --password P] [--ca CA.pem]
                                  [--expect-failure auth|tls]
Exits non-zero on any failure; prints one line per step."""
import argparse
import ssl
import sys
import time

from cassandra import InvalidRequest
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import Cluster, NoHostAvailable
from cassandra.query import BatchStatement, BatchType, SimpleStatement

ap = argparse.ArgumentParser()
ap.add_argument("host")
ap.add_argument("port", type=int)
ap.add_argument("--user")
ap.add_argument("--password")
ap.add_argument("--ca")
ap.add_argument("--expect-failure", choices=["auth", "tls"])
args = ap.parse_args()

options = {}
if args.user is not None:
    options["auth_provider"] = PlainTextAuthProvider(args.user, args.password)
if args.ca is not None:
    ctx = ssl.create_default_context(cafile=args.ca)
    options["ssl_context"] = ctx
    options["ssl_options"] = {"server_hostname": "localhost"}
# A bounded connect: a refused client must fail, not wait.
cluster = Cluster(contact_points=[args.host], port=args.port, connect_timeout=10, **options)

if args.expect_failure:
    try:
        cluster.connect()
    except NoHostAvailable as e:
        # One line naming why, as an application would log it.
        reason = " ".join(str(err) for err in e.errors.values())
        print("refused:", reason)
        # Refused at once, never by a timeout. Without credentials the
        # authenticator answers; a plaintext client gets the TLS alert
        # record (0x15), which the driver reads as protocol version 21.
        assert "timed out" not in reason.lower(), reason
        if args.expect_failure == "auth":
            assert "authentication" in reason.lower(), reason
        cluster.shutdown()
        print("done")
        sys.exit(0)
    print("connected although", args.expect_failure, "should have refused it")
    sys.exit(1)

session = cluster.connect()
print("connected protocol_version", cluster.protocol_version)
assert cluster.protocol_version == 5, cluster.protocol_version
assert "system" in cluster.metadata.keyspaces
# The port clients reach it on, also when the server chose it (--port 0).
local = session.execute("SELECT rpc_port, data_center FROM system.local").one()
assert local.rpc_port == args.port, local

# Schema with compaction and compression options, seen by the metadata load.
session.execute(
    "CREATE KEYSPACE drv WITH replication = "
    "{'class': 'SimpleStrategy', 'replication_factor': 1}"
)
session.execute(
    "CREATE TABLE drv.events (k int, c int, v text, PRIMARY KEY (k, c)) "
    "WITH compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 64} "
    "AND compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}"
)
session.execute(
    "CREATE TABLE drv.series (k int, t timestamp, v text, PRIMARY KEY (k, t)) "
    "WITH CLUSTERING ORDER BY (t DESC) "
    "AND compaction = {'class': 'TimeWindowCompactionStrategy', "
    "'compaction_window_unit': 'HOURS', 'compaction_window_size': 1} "
    "AND compression = {'class': 'ZstdCompressor'} AND default_time_to_live = 86400"
)
cluster.refresh_schema_metadata()
events_meta = cluster.metadata.keyspaces["drv"].tables["events"]
assert "LeveledCompactionStrategy" in events_meta.options["compaction"]["class"], events_meta.options
assert "LZ4Compressor" in events_meta.options["compression"]["class"], events_meta.options
series_meta = cluster.metadata.keyspaces["drv"].tables["series"]
assert [c.name for c in series_meta.clustering_key] == ["t"]
assert series_meta.options["default_time_to_live"] == 86400, series_meta.options
print("schema ok")

session.set_keyspace("drv")
insert = session.prepare("INSERT INTO events (k, c, v) VALUES (?, ?, ?)")
insert_ttl = session.prepare("INSERT INTO events (k, c, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?")
select_one = session.prepare("SELECT v FROM events WHERE k = ? AND c = ?")

# TTL and timestamps, read back through writetime() and ttl().
session.execute(insert_ttl, (2, 0, "ttl", 3600, 1000))
row = session.execute("SELECT v, writetime(v) AS wt, ttl(v) AS tl FROM events WHERE k = 2 AND c = 0").one()
assert row.v == "ttl" and row.wt == 1000, row
assert 3500 < row.tl <= 3600, row
# An older timestamp loses to the newer write.
session.execute(insert_ttl, (2, 0, "older", 3600, 999))
assert session.execute(select_one, (2, 0)).one().v == "ttl"
print("ttl and timestamps ok")

# Lightweight transactions: [applied] and the existing row.
r = session.execute("INSERT INTO events (k, c, v) VALUES (5, 1, 'first') IF NOT EXISTS")
assert r.was_applied
r = session.execute("INSERT INTO events (k, c, v) VALUES (5, 1, 'second') IF NOT EXISTS")
assert not r.was_applied and r.one().v == "first", r.one()
r = session.execute("UPDATE events SET v = 'third' WHERE k = 5 AND c = 1 IF v = 'nope'")
assert not r.was_applied and r.one().v == "first", r.one()
r = session.execute("UPDATE events SET v = 'third' WHERE k = 5 AND c = 1 IF v = 'first'")
assert r.was_applied
assert session.execute(select_one, (5, 1)).one().v == "third"
r = session.execute("DELETE FROM events WHERE k = 5 AND c = 1 IF EXISTS")
assert r.was_applied
r = session.execute("DELETE FROM events WHERE k = 5 AND c = 1 IF EXISTS")
assert not r.was_applied
print("lwt ok")

# Slices in both orders, then row, range and partition deletes.
for c in range(200):
    session.execute(insert, (1, c, "v%d" % c))
rows = list(session.execute("SELECT c, v FROM events WHERE k = 1 AND c >= 10 AND c < 20"))
assert [r.c for r in rows] == list(range(10, 20)), rows
rows = list(session.execute("SELECT c FROM events WHERE k = 1 AND c < 20 ORDER BY c DESC LIMIT 3"))
assert [r.c for r in rows] == [19, 18, 17], rows
session.execute("DELETE FROM events WHERE k = 1 AND c = 15")
session.execute("DELETE FROM events WHERE k = 1 AND c >= 100 AND c < 150")
rows = [r.c for r in session.execute("SELECT c FROM events WHERE k = 1")]
assert rows == [c for c in range(200) if c != 15 and not 100 <= c < 150], rows[:20]
rows = [r.c for r in session.execute("SELECT c FROM events WHERE k = 1 ORDER BY c DESC")]
assert rows == [c for c in reversed(range(200)) if c != 15 and not 100 <= c < 150]
session.execute(insert, (4, 0, "gone"))
session.execute("DELETE FROM events WHERE k = 4")
assert session.execute("SELECT * FROM events WHERE k = 4").one() is None
print("deletes and slices ok")

# Batches, logged and unlogged.
for kind, k in ((BatchType.LOGGED, 3), (BatchType.UNLOGGED, 6)):
    batch = BatchStatement(batch_type=kind)
    for c in range(5):
        batch.add(insert, (k, c, "b"))
    session.execute(batch)
    assert len(list(session.execute("SELECT * FROM events WHERE k = %d" % k))) == 5
print("batch ok")

# 10,000 rows paged, simple and prepared, each row once and in order.
for c in range(10000):
    session.execute_async(insert, (7, c, "p%d" % c)).result()
stmt = SimpleStatement("SELECT c FROM events WHERE k = 7", fetch_size=333)
seen = [r.c for r in session.execute(stmt)]
assert seen == list(range(10000)), (len(seen), seen[:5])
page = session.prepare("SELECT c FROM events WHERE k = ? ORDER BY c DESC")
page.fetch_size = 333
seen = [r.c for r in session.execute(page, (7,))]
assert seen == list(reversed(range(10000))), (len(seen), seen[:5])
print("paging ok")

# The server restarts on the same port; the session reconnects and its
# prepared statements run again.
print("ready for restart", flush=True)
sys.stdin.readline()
deadline = time.time() + 60
while True:
    try:
        got = session.execute(select_one, (1, 42)).one()
        break
    except NoHostAvailable:
        if time.time() > deadline:
            raise
        time.sleep(0.2)
assert got.v == "v42", got
session.execute(insert, (8, 0, "after"))
assert session.execute(select_one, (8, 0)).one().v == "after"
seen = [r.c for r in session.execute(page, (7,))]
assert len(seen) == 10000
try:
    session.execute("SELECT * FROM events WHERE v = 'x'")
    raise AssertionError("filtering on a regular column without ALLOW FILTERING was accepted")
except InvalidRequest:
    pass
print("prepared after restart ok")

session.execute("DROP KEYSPACE drv")
cluster.shutdown()
print("done")
