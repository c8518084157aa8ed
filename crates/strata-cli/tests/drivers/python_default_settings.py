"""The Python cassandra-driver with default settings against `strata serve`:
version negotiation from the driver's highest (DSE v2, v1, then 5), the full
schema metadata load, then a workload a client runs. Exits non-zero on any
failure; prints one line per step."""
import sys
import uuid

from cassandra.cluster import Cluster
from cassandra.query import BatchStatement, SimpleStatement, BatchType

host, port = sys.argv[1], int(sys.argv[2])
cluster = Cluster(contact_points=[host], port=port)
session = cluster.connect()
print("connected protocol_version", cluster.protocol_version)
assert cluster.protocol_version == 5, cluster.protocol_version

meta = cluster.metadata
print("keyspaces", sorted(meta.keyspaces))
assert "system" in meta.keyspaces

session.execute(
    "CREATE KEYSPACE IF NOT EXISTS drv WITH replication = "
    "{'class': 'SimpleStrategy', 'replication_factor': 1}"
)
session.execute(
    "CREATE TABLE IF NOT EXISTS drv.events (k int, c int, v text, PRIMARY KEY (k, c)) "
    "WITH compaction = {'class': 'LeveledCompactionStrategy'} "
    "AND compression = {'class': 'LZ4Compressor'}"
)
cluster.refresh_schema_metadata()
assert "events" in cluster.metadata.keyspaces["drv"].tables
print("schema ok")

session.set_keyspace("drv")
insert = session.prepare("INSERT INTO events (k, c, v) VALUES (?, ?, ?)")
for c in range(200):
    session.execute(insert, (1, c, "v%d" % c))
session.execute("INSERT INTO events (k, c, v) VALUES (2, 0, 'ttl') USING TTL 3600 AND TIMESTAMP 1000")
rows = list(session.execute("SELECT c, v FROM events WHERE k = 1 AND c >= 10 AND c < 20"))
assert [r.c for r in rows] == list(range(10, 20)), rows
rows = list(session.execute("SELECT c FROM events WHERE k = 1 ORDER BY c DESC LIMIT 3"))
assert [r.c for r in rows] == [199, 198, 197], rows
print("reads ok")

batch = BatchStatement(batch_type=BatchType.UNLOGGED)
for c in range(5):
    batch.add(insert, (3, c, "b"))
session.execute(batch)
assert len(list(session.execute("SELECT * FROM events WHERE k = 3"))) == 5
print("batch ok")

# Paging: 200 rows in pages of 7.
stmt = SimpleStatement("SELECT c FROM events WHERE k = 1", fetch_size=7)
seen = [r.c for r in session.execute(stmt)]
assert seen == list(range(200)), seen[:10]
print("paging ok")

select = session.prepare("SELECT v FROM events WHERE k = ? AND c = ?")
assert session.execute(select, (1, 42)).one().v == "v42"
print("prepared ok")

session.execute("DROP KEYSPACE drv")
cluster.shutdown()
print("done")
