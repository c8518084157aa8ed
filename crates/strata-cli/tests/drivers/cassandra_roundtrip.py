"""Helper of the export round trip against a real Apache Cassandra
(tests/cassandra_export_loads_into_cassandra.rs), through the Python driver:

  load PORT SEED KEYSPACE [COMPRESSION]
                             a seeded mix of writes into a Strata server: inserts
                             and updates with old and current timestamps, long and
                             short TTLs, collections, cell, row, range and partition
                             deletions
  run PORT FILE              runs a CQL file's statements (schema.cql)
  compare A_PORT B_PORT KEYSPACE TABLE...
                             every row of each table, with writetime() and ttl() of
                             each simple column, read from both nodes; values and
                             writetimes must be equal, TTLs within 2 s; prints
                             "equal: N rows" or the differences and exits 1
"""
import random
import sys
import time

from cassandra.cluster import Cluster
from cassandra.query import SimpleStatement


def session(port, host="127.0.0.1"):
    """A session; `HOST:PORT` picks another node. CONSISTENCY=ALL in the
    environment reads at CL ALL (every replica must answer)."""
    port = str(port)
    if ":" in port:
        host, port = port.split(":")
    from cassandra import ConsistencyLevel
    from cassandra.cluster import ExecutionProfile, EXEC_PROFILE_DEFAULT
    import os
    level = getattr(ConsistencyLevel, os.environ.get("CONSISTENCY", "ONE"))
    profile = ExecutionProfile(consistency_level=level, request_timeout=120)
    cluster = Cluster([host], port=int(port), execution_profiles={EXEC_PROFILE_DEFAULT: profile})
    return cluster, cluster.connect()


SCHEMA = [
    "CREATE KEYSPACE IF NOT EXISTS {ks} WITH replication = "
    "{{'class': 'SimpleStrategy', 'replication_factor': 1}}",
    "CREATE TABLE IF NOT EXISTS {ks}.wide (pk int, ck text, n bigint, d double, "
    "b blob, u uuid, ts timestamp, dec decimal, s text static, "
    "m map<text, int>, l list<int>, st set<text>, PRIMARY KEY (pk, ck)) "
    "WITH gc_grace_seconds = 0",
    "CREATE TABLE IF NOT EXISTS {ks}.rev (a int, b int, c date, v text, "
    "PRIMARY KEY ((a, b), c)) WITH CLUSTERING ORDER BY (c DESC)",
]


def load(port, seed, ks, compression=None):
    rng = random.Random(int(seed))
    cluster, s = session(port)
    for stmt in SCHEMA:
        s.execute(stmt.format(ks=ks))
    if compression:
        for t in ("wide", "rev"):
            s.execute("ALTER TABLE %s.%s WITH compression = %s" % (ks, t, compression))
    now = int(time.time() * 1_000_000)
    for i in range(400):
        pk = rng.randrange(40)
        ck = "c%02d" % rng.randrange(30)
        ts = rng.choice([now + i, 1_000 + i, now - 86_400_000_000 + i])
        ttl = rng.choice([0, 0, 0, 86_400, 20])
        using = "USING TIMESTAMP %d" % ts + (" AND TTL %d" % ttl if ttl else "")
        kind = rng.randrange(10)
        if kind < 4:
            s.execute(
                "INSERT INTO %s.wide (pk, ck, n, d, b, u, ts, dec, s, m, l, st) VALUES "
                "(%d, '%s', %d, %r, 0x%02x, uuid(), %d, %s, 's%d', {'k%d': %d}, [%d, %d], {'e%d'}) %s"
                % (ks, pk, ck, rng.randrange(-10**12, 10**12), rng.random(), rng.randrange(256),
                   rng.randrange(10**12), "%d.%02d" % (rng.randrange(1000), rng.randrange(100)),
                   i, i, i, i, i + 1, i, using))
        elif kind < 6:
            s.execute("UPDATE %s.wide %s SET n = %d, m['x%d'] = %d WHERE pk = %d AND ck = '%s'"
                      % (ks, using, i, i, i, pk, ck))
        elif kind == 6:
            s.execute("DELETE d FROM %s.wide USING TIMESTAMP %d WHERE pk = %d AND ck = '%s'"
                      % (ks, ts, pk, ck))
        elif kind == 7:
            lo, hi = sorted(rng.sample(range(30), 2))
            s.execute("DELETE FROM %s.wide USING TIMESTAMP %d WHERE pk = %d AND ck >= 'c%02d' AND ck < 'c%02d'"
                      % (ks, ts, pk, lo, hi))
        elif kind == 8:
            s.execute("DELETE FROM %s.wide USING TIMESTAMP %d WHERE pk = %d AND ck = '%s'"
                      % (ks, ts, pk, ck))
        else:
            if rng.random() < 0.2:
                s.execute("DELETE FROM %s.wide USING TIMESTAMP %d WHERE pk = %d" % (ks, ts, pk))
            else:
                s.execute("INSERT INTO %s.rev (a, b, c, v) VALUES (%d, %d, '2024-01-%02d', 'v%d') %s"
                          % (ks, pk % 3, pk, 1 + rng.randrange(28), i, using))
    cluster.shutdown()
    print("loaded")


def run(port, path):
    cluster, s = session(port)
    text = open(path).read()
    for stmt in text.split(";"):
        if stmt.strip():
            s.execute(stmt)
    cluster.shutdown()
    print("ran")


def rows(s, ks, table):
    meta = s.cluster.metadata.keyspaces[ks].tables[table]
    key_names = {c.name for c in meta.primary_key}
    simple = [c.name for c in meta.columns.values()
              if c.name not in key_names and not c.cql_type.startswith(("map", "list", "set"))]
    cols = list(meta.columns.keys()) + ["writetime(%s), ttl(%s)" % (c, c) for c in simple]
    q = "SELECT %s FROM %s.%s" % (", ".join(cols), ks, table)
    out = []
    for r in s.execute(SimpleStatement(q, fetch_size=1000)):
        out.append(r._asdict())
    return out


def key(r):
    return repr(sorted((k, v) for k, v in r.items() if not k.startswith("ttl_")))


def compare(a_port, b_port, ks, tables):
    ca, a = session(a_port)
    cb, b = session(b_port)
    bad = 0
    total = 0
    for t in tables:
        ra = sorted(rows(a, ks, t), key=key)
        rb = sorted(rows(b, ks, t), key=key)
        total += len(ra)
        if len(ra) != len(rb):
            print("%s: %d rows against %d" % (t, len(ra), len(rb)))
            bad += 1
        for x, y in zip(ra, rb):
            for k in x:
                vx, vy = x[k], y.get(k)
                if k.startswith("ttl_") and vx is not None and vy is not None:
                    if abs(vx - vy) > 2:
                        print("%s: ttl %s differs: %s / %s in %s" % (t, k, vx, vy, x))
                        bad += 1
                elif vx != vy:
                    print("%s: %s differs: %r / %r\n  %r\n  %r" % (t, k, vx, vy, x, y))
                    bad += 1
                    break
    ca.shutdown()
    cb.shutdown()
    if bad:
        sys.exit(1)
    print("equal: %d rows" % total)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "load":
        load(*sys.argv[2:6])
    elif cmd == "run":
        run(*sys.argv[2:4])
    elif cmd == "compare":
        compare(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        sys.exit("unknown command " + cmd)
