"""The Python cassandra-driver against `strata serve` with the types beyond
the scalars: frozen lists, sets and maps (nested), tuples, a frozen
user-defined type (registered as a Python class), time, duration and
vector<float, 3>, bound by prepared statements and written as literals, in
columns and in clustering keys; non-frozen lists, sets, maps and a UDT
changed element by element (appends, prepends, adds, removes, puts, index
sets, field sets) and read whole, with per-element writetime(); counters
incremented and decremented by prepared statements and a COUNTER batch. The
driver must decode every result column
from the metadata the server sends (the vector as Cassandra 5's custom
VectorType). Then it prints "ready for restart" and waits for a line on
stdin: the test restarts the server (the rows come back from the commit log
or the sstables), and the same reads must answer the same.

usage: python_data_model.py HOST PORT
Exits non-zero on any failure; prints one line per step."""
import argparse
import sys
import time

from cassandra.cluster import Cluster, NoHostAvailable
from cassandra.query import BatchStatement, BatchType
from cassandra.util import Duration, Time

ap = argparse.ArgumentParser()
ap.add_argument("host")
ap.add_argument("port", type=int)
args = ap.parse_args()

cluster = Cluster([args.host], port=args.port, connect_timeout=10)
session = cluster.connect()
session.default_timeout = 30
print("connected protocol_version", cluster.protocol_version)

session.execute(
    "CREATE KEYSPACE dm WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
)
session.execute("CREATE TYPE dm.addr (street text, nr int)")
session.execute(
    "CREATE TABLE dm.t (k int, c frozen<list<int>>, l frozen<list<text>>, "
    "s frozen<set<int>>, m frozen<map<text, frozen<list<int>>>>, tu tuple<int, text>, "
    "a frozen<addr>, tm time, d duration, v vector<float, 3>, PRIMARY KEY (k, c)) "
    "WITH CLUSTERING ORDER BY (c DESC)"
)


class Addr(object):
    def __init__(self, street=None, nr=None):
        self.street = street
        self.nr = nr

    def __eq__(self, other):
        return (self.street, self.nr) == (other.street, other.nr)

    def __repr__(self):
        return "Addr(%r, %r)" % (self.street, self.nr)


cluster.register_user_type("dm", "addr", Addr)
print("schema ok")

insert = session.prepare(
    "INSERT INTO dm.t (k, c, l, s, m, tu, a, tm, d, v) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
rows = {
    (1,): ([1, 2], ["x", "it's"], {3, 1, 2}, {"b": [2], "a": [1, 1]}, (7, "seven"),
           Addr("Main", 5), Time(29574123456789), Duration(14, 3, 5400000000000),
           [1.0, 2.5, -3.0]),
    (2,): ([1], [], set(), {}, (None, "n"), Addr(None, 9), Time(0),
           Duration(0, -2, 0), [0.0, 0.0, 1.0]),
    (3,): ([], ["a"], {-1}, {"z": []}, (1, None), Addr("x", None), Time(1),
           Duration(0, 0, 1), [-1.0, 1.0, 0.5]),
}
for (i,), (c, l, s, m, tu, a, tm, d, v) in rows.items():
    session.execute(insert, (1, c, l, s, m, tu, a, tm, d, v))
session.execute(
    "INSERT INTO dm.t (k, c, l, s, m, tu, a, tm, d, v) VALUES (1, [2], ['lit'], {5}, "
    "{'q': [9]}, (2, 'two'), {street: 'Side', nr: 1}, '08:00:00', 1h30m, [3, 2, 1])"
)
session.execute(
    "CREATE TABLE dm.nf (k int PRIMARY KEY, l list<int>, s set<text>, "
    "m map<text, int>, a addr)"
)
session.execute("INSERT INTO dm.nf (k, l, s, m, a) VALUES (1, [1, 2], {'b'}, {'x': 1}, "
                "{street: 'Main', nr: 5})")
steps = [
    ("UPDATE dm.nf SET l = l + ?, s = s + ?, m = m + ? WHERE k = 1",
     ([3], {"a", "c"}, {"y": 2})),
    ("UPDATE dm.nf SET l = ? + l, s = s - ?, m = m - ? WHERE k = 1", ([0], {"b"}, {"x"})),
    ("UPDATE dm.nf SET l[?] = ?, m[?] = ?, a.nr = ? WHERE k = 1", (1, 10, "z", 26, 6)),
    ("DELETE l[?], m[?] FROM dm.nf WHERE k = 1", (3, "y")),
]
for cql, values in steps:
    session.execute(session.prepare(cql), values)
session.execute("CREATE TABLE dm.cn (k int PRIMARY KEY, a counter, b counter)")
bump = session.prepare("UPDATE dm.cn SET a = a + ?, b = b - ? WHERE k = ?")
for n in range(1, 11):
    session.execute(bump, (n, 1, n % 2))
batch = BatchStatement(batch_type=BatchType.COUNTER)
batch.add(bump, (100, 0, 0))
batch.add(bump, (100, 0, 1))
session.execute(batch)
print("writes ok")
# k = 0 took 2 + 4 + ... + 10, k = 1 took 1 + 3 + ... + 9; both plus 100.
CN_WANT = {0: (130, -5), 1: (125, -5)}
NF_WANT = ([0, 10, 2], {"a", "c"}, {"z": 26}, Addr("Main", 6))


def check_non_frozen(stage):
    r = session.execute("SELECT l, s, m, a, writetime(s) AS ws FROM dm.nf WHERE k = 1").one()
    have = (list(r.l), set(r.s), dict(r.m), r.a)
    if have != NF_WANT:
        sys.exit("%s: non-frozen row: want %r, have %r" % (stage, NF_WANT, have))
    if len(r.ws) != 2 or any(not isinstance(t, int) for t in r.ws):
        sys.exit("%s: writetime(s) %r" % (stage, r.ws))


def check(stage):
    got = list(session.execute("SELECT c, l, s, m, tu, a, tm, d, v FROM dm.t WHERE k = 1"))
    # c DESC: [2] > [1, 2] > [1] > [].
    order = [list(r.c or []) for r in got]
    if order != [[2], [1, 2], [1], []]:
        sys.exit("%s: clustering order %r" % (stage, order))
    by_c = {tuple(r.c or []): r for r in got}
    for (i,), (c, l, s, m, tu, a, tm, d, v) in rows.items():
        r = by_c[tuple(c)]
        want = (list(l) or None, set(s) or None, {k: list(x) for k, x in m.items()} or None,
                tu, a, tm, d, v)
        have = (list(r.l) if r.l else None, set(r.s) if r.s else None,
                {k: list(x) for k, x in r.m.items()} if r.m else None,
                tuple(r.tu), r.a, r.tm, r.d, [float(x) for x in r.v])
        if want != have:
            sys.exit("%s: row %r: want %r, have %r" % (stage, c, want, have))
    lit = by_c[(2,)]
    if (list(lit.l), lit.a, lit.d, [float(x) for x in lit.v]) != (
            ["lit"], Addr("Side", 1), Duration(0, 0, 5400000000000), [3.0, 2.0, 1.0]):
        sys.exit("%s: literal row %r" % (stage, lit))
    field = list(session.execute("SELECT a.street FROM dm.t WHERE k = 1 AND c = [1, 2]"))
    if [r[0] for r in field] != ["Main"]:
        sys.exit("%s: field selection %r" % (stage, field))
    sliced = list(session.execute("SELECT c FROM dm.t WHERE k = 1 AND c < [1, 2] AND c >= [1]"))
    if [list(r.c) for r in sliced] != [[1]]:
        sys.exit("%s: slice %r" % (stage, sliced))
    check_non_frozen(stage)
    counters = {r.k: (r.a, r.b) for r in session.execute("SELECT k, a, b FROM dm.cn")}
    if counters != CN_WANT:
        sys.exit("%s: counters: want %r, have %r" % (stage, CN_WANT, counters))
    print(stage, "reads ok")


check("before restart")
print("ready for restart", flush=True)
sys.stdin.readline()
# Until the driver has reconnected to the restarted server.
deadline = time.time() + 60
while True:
    try:
        session.execute("SELECT k FROM dm.t WHERE k = 1")
        break
    except NoHostAvailable:
        if time.time() > deadline:
            raise
        time.sleep(0.2)
check("after restart")
cluster.shutdown()
print("done")
