"""Helper of the export round trip against a real Apache Cassandra
(tests/cassandra_export_loads_into_cassandra.rs), through the Python driver:

  load PORT SEED KEYSPACE [COMPRESSION]
                             a seeded mix of writes into a Strata server: inserts
                             and updates with old and current timestamps, long and
                             short TTLs, collections, cell, row, range and partition
                             deletions
                             and two partitions of about 700 KB in table `deep`
                             (rows of 200-byte values, a range deletion across many
                             64 KiB blocks, row deletions), which Cassandra reads
                             through its row index
  run PORT FILE              runs a CQL file's statements (schema.cql)
  replay PORT FILE...        the plain statements of golden statement files (JSON
                             lines with "cql") that Cassandra accepted, in order;
                             statements with bound values, batches and DROPs are
                             left out, so every table stays to compare
  compare-in-order A_PORT B_PORT KEYSPACE TABLE...
                             the same comparison for tables of any size: both full
                             scans come in token order (Murmur3 on both), so rows
                             are compared as they stream, in constant memory
  tables PORT PREFIX         the tables of keyspaces named PREFIX*, as ks.table
  compare A_PORT B_PORT KEYSPACE TABLE...
                             every row of each table, with writetime() and ttl() of
                             each simple column, read from both nodes; values and
                             writetimes must be equal, TTLs within 2 s (a row or
                             value whose TTL runs out within 3 s may differ: the
                             two reads are a moment apart); for `deep`
                             also clustering slices forwards and backwards with a
                             LIMIT, which seek through the row index; prints
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
    # Rows as dicts keyed by the names the node gives its columns
    # ("writetime(n)"), case kept.
    from cassandra.query import dict_factory
    profile = ExecutionProfile(consistency_level=level, request_timeout=120,
                               row_factory=dict_factory)
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
    "CREATE TABLE IF NOT EXISTS {ks}.deep (pk int, ck int, v text, "
    "PRIMARY KEY (pk, ck))",
]
TABLES = ("wide", "rev", "deep")
DEEP_ROWS = 3500


def load_deep(s, rng, ks, now):
    """Two partitions wider than many 64 KiB blocks: Cassandra's reader finds
    slices in them through the promoted row index, not by scanning."""
    from cassandra.concurrent import execute_concurrent_with_args
    insert = s.prepare("INSERT INTO %s.deep (pk, ck, v) VALUES (?, ?, ?) USING TIMESTAMP ?" % ks)
    args = []
    for pk in (1, 2):
        for ck in range(DEEP_ROWS):
            value = "%d-%d-" % (pk, ck) + "x" * 190 + "%08d" % rng.randrange(10**8)
            args.append((pk, ck, value, now - rng.randrange(10**9)))
    execute_concurrent_with_args(s, insert, args, concurrency=32)
    for pk in (1, 2):
        lo = rng.randrange(300, 900)
        hi = lo + rng.randrange(600, 1500)
        s.execute("DELETE FROM %s.deep USING TIMESTAMP %d WHERE pk = %d AND ck >= %d AND ck < %d"
                  % (ks, now, pk, lo, hi))
        for _ in range(20):
            s.execute("DELETE FROM %s.deep USING TIMESTAMP %d WHERE pk = %d AND ck = %d"
                      % (ks, now, pk, rng.randrange(DEEP_ROWS)))


def load(port, seed, ks, compression=None):
    rng = random.Random(int(seed))
    cluster, s = session(port)
    for stmt in SCHEMA:
        s.execute(stmt.format(ks=ks))
    if compression:
        for t in TABLES:
            s.execute("ALTER TABLE %s.%s WITH compression = %s" % (ks, t, compression))
    now = int(time.time() * 1_000_000)
    for i in range(400):
        pk = rng.randrange(40)
        ck = "c%02d" % rng.randrange(30)
        ts = rng.choice([now + i, 1_000 + i, now - 86_400_000_000 + i])
        ttl = rng.choice([0, 0, 0, 86_400, 120])
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
    load_deep(s, rng, ks, now)
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


def replay(port, paths):
    import json
    cluster, s = session(port)
    ran = failed = 0
    for path in paths:
        for line in open(path):
            d = json.loads(line)
            cql = d.get("cql")
            # What Cassandra refused stays out (Strata accepts a few such
            # statements on purpose, docs/cql.md, and Cassandra could not
            # hold what they write).
            if not cql or "values" in d or "raw_values" in d or "error" in d:
                continue
            if cql.lstrip().upper().startswith("DROP"):
                continue
            try:
                s.execute(SimpleStatement(cql))
                ran += 1
            except Exception as e:
                failed += 1
                print("refused: %s: %s" % (cql[:120], str(e)[:200]), file=sys.stderr)
    cluster.shutdown()
    print("replayed %d statements (%d refused)" % (ran, failed))


def tables(port, prefix):
    cluster, s = session(port)
    for ks, meta in sorted(s.cluster.metadata.keyspaces.items()):
        if ks.startswith(prefix):
            for t in sorted(meta.tables):
                print("%s.%s" % (ks, t))
    cluster.shutdown()


def row_stream(s, ks, table):
    """Every row of the table in the order a full scan returns it."""
    return iter(rows(s, ks, table, lazy=True))


def compare_in_order(a_port, b_port, ks, tables):
    ca, a = session(a_port)
    cb, b = session(b_port)
    bad = total = 0
    missing = object()
    for t in tables:
        xs, ys = row_stream(a, ks, t), row_stream(b, ks, t)
        while bad < 20:
            x, y = next(xs, missing), next(ys, missing)
            if x is missing and y is missing:
                break
            if x is missing or y is missing:
                print("%s: one side ends after %d rows" % (t, total))
                bad += 1
                break
            total += 1
            bad += row_differences(t, x, y, tolerate_expiring=False)
    ca.shutdown()
    cb.shutdown()
    if bad:
        sys.exit(1)
    print("equal: %d rows" % total)


def rows(s, ks, table, lazy=False):
    meta = s.cluster.metadata.keyspaces[ks].tables[table]
    udts = s.cluster.metadata.keyspaces[ks].user_types
    key_names = {c.name for c in meta.primary_key}
    simple = [c.name for c in meta.columns.values()
              if c.name not in key_names
              and not c.cql_type.startswith(("map", "list", "set"))
              and c.cql_type != "counter" and c.cql_type not in udts]
    from cassandra.metadata import protect_name as q_
    cols = [q_(c) for c in meta.columns.keys()]
    cols += ["writetime(%s), ttl(%s)" % (q_(c), q_(c)) for c in simple]
    q = "SELECT %s FROM %s.%s" % (", ".join(cols), q_(ks), q_(table))
    result = s.execute(SimpleStatement(q, fetch_size=5000))
    if lazy:
        return iter(result)
    return list(result)


def slices(s, ks, seed):
    """Clustering slices of `deep`, forwards and backwards, with and without
    a LIMIT; the same seed gives both sides the same queries."""
    rng = random.Random(seed)
    out = []
    for _ in range(40):
        pk = rng.choice((1, 2))
        lo = rng.randrange(DEEP_ROWS)
        hi = lo + rng.randrange(1, 800)
        order = rng.choice(("ASC", "DESC"))
        limit = rng.choice(("", " LIMIT 7", " LIMIT 200"))
        q = ("SELECT ck, v, writetime(v) FROM %s.deep WHERE pk = %d AND ck >= %d AND ck < %d "
             "ORDER BY ck %s%s" % (ks, pk, lo, hi, order, limit))
        out.append((q, [tuple(r.values()) for r in s.execute(q)]))
    return out


def expiring(r):
    """Whether a TTL in the row runs out within 3 s: it may have expired on
    one side and not yet on the other while the two were read."""
    return any(v is not None and v <= 3 for k, v in r.items() if k.startswith("ttl("))


def same(x, y):
    """Equal values, a float NaN equal to itself."""
    if isinstance(x, float) and isinstance(y, float) and x != x and y != y:
        return True
    return x == y


def row_differences(t, x, y, tolerate_expiring):
    """The differences between two reads of one row, printed unless
    `tolerate_expiring` (a row whose TTL was running out as it was read):
    every value equal, TTLs within 2 s. Counts at most one value
    difference (the first), plus each TTL too far apart."""
    bad = 0
    for c in x:
        vx, vy = x[c], y.get(c)
        if c.startswith("ttl(") and vx is not None and vy is not None:
            if abs(vx - vy) > 2:
                if not tolerate_expiring:
                    print("%s: %s differs: %s / %s in %s" % (t, c, vx, vy, x))
                bad += 1
        elif not same(vx, vy):
            if not tolerate_expiring:
                print("%s: %s differs: %r / %r\n  %r\n  %r" % (t, c, vx, vy, x, y))
            return bad + 1
    return bad


def compare(a_port, b_port, ks, tables):
    ca, a = session(a_port)
    cb, b = session(b_port)
    bad = 0
    total = 0
    racing = 0
    for t in tables:
        pk = [c.name for c in a.cluster.metadata.keyspaces[ks].tables[t].primary_key]
        da = {repr(tuple(r[c] for c in pk)): r for r in rows(a, ks, t)}
        db = {repr(tuple(r[c] for c in pk)): r for r in rows(b, ks, t)}
        total += len(da)
        for k in sorted(set(da) | set(db)):
            x, y = da.get(k), db.get(k)
            if x is None or y is None:
                if expiring(x or y):
                    racing += 1
                    continue
                print("%s: row %s only on %s: %r" % (t, k, "the second" if x is None else "the first", x or y))
                bad += 1
                continue
            if expiring(x) or expiring(y):
                if row_differences(t, x, y, tolerate_expiring=True):
                    racing += 1
                continue
            bad += row_differences(t, x, y, tolerate_expiring=False)
    if "deep" in tables:
        for (q, x), (_, y) in zip(slices(a, ks, 7), slices(b, ks, 7)):
            total += len(x)
            if x != y:
                print("%s: %d rows against %d; first difference at %r"
                      % (q, len(x), len(y), next((p for p in zip(x, y) if p[0] != p[1]), None)))
                bad += 1
    ca.shutdown()
    cb.shutdown()
    if bad:
        sys.exit(1)
    print("equal: %d rows" % total + (" (%d expiring as they were read)" % racing if racing else ""))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "load":
        load(*sys.argv[2:6])
    elif cmd == "run":
        run(*sys.argv[2:4])
    elif cmd == "replay":
        replay(sys.argv[2], sys.argv[3:])
    elif cmd == "compare-in-order":
        compare_in_order(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    elif cmd == "tables":
        tables(sys.argv[2], sys.argv[3])
    elif cmd == "compare":
        compare(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        sys.exit("unknown command " + cmd)
