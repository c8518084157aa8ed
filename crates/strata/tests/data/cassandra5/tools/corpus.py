"""The statements record.py runs, in order. Each entry is a dict (see record.py).

scalar(): the main corpus (statements.jsonl): scalar types only.
datamodel(): collections, counters, UDTs, time, duration (statements_datamodel.jsonl);
    its second part (keyspace golden_dm2) reads each group of writes back in four phases
    (memtable, after a restart, after a flush, after a compaction).
Both return (entries, keyspaces the corpus creates).
"""

import datetime
import decimal
import ipaddress
import uuid

from cassandra.query import UNSET_VALUE
from cassandra.util import Duration, Time

RF1 = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


class Corpus:
    def __init__(self):
        self.entries = []

    def q(self, cql, **kw):
        self.entries.append(dict(cql=cql, **kw))

    def p(self, cql, values, **kw):
        """A prepared execution."""
        self.entries.append(dict(cql=cql, values=values, **kw))

    def d(self, directive, **kw):
        """A phase directive (flush, compact, restart, sleep; see record.py)."""
        self.entries.append(dict(directive=directive, **kw))

    def phases(self, group, keyspace, reads):
        """The same reads right after the writes (memtable), after a kill -9 and restart
        (commit log replay), after a flush and after a major compaction."""
        for phase in PHASES:
            if phase == "restart":
                self.d("restart")
            elif phase != "memtable":
                self.d(phase, keyspace=keyspace)
            for r in reads:
                self.entries.append(dict(r, group=group, phase=phase))


PHASES = ("memtable", "restart", "flush", "compact")


def r(cql, values=None, **kw):
    """A read for Corpus.phases."""
    return dict(cql=cql, **kw) if values is None else dict(cql=cql, values=values, **kw)


def batch(stmts, kind="", ts=None):
    head = "BEGIN %sBATCH" % (kind + " " if kind else "")
    if ts is not None:
        head += " USING TIMESTAMP %d" % ts
    return head + " " + " ".join(s.rstrip(";") + ";" for s in stmts) + " APPLY BATCH"


def scalar():
    c = Corpus()
    q, p = c.q, c.p

    # --- before any USE ---------------------------------------------------------------
    q("SELECT * FROM kv")
    q("CREATE TABLE kv (k int PRIMARY KEY, v text)")

    # --- keyspaces --------------------------------------------------------------------
    q("CREATE KEYSPACE golden WITH replication = %s" % RF1)
    q("CREATE KEYSPACE golden WITH replication = %s" % RF1)
    q("CREATE KEYSPACE IF NOT EXISTS golden WITH replication = %s" % RF1)
    q("CREATE KEYSPACE Golden WITH replication = %s" % RF1)
    q("CREATE KEYSPACE golden2 WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1} "
      "AND durable_writes = false")
    q("SELECT keyspace_name, durable_writes, replication FROM system_schema.keyspaces "
      "WHERE keyspace_name IN ('golden', 'golden2')")
    q("ALTER KEYSPACE golden2 WITH replication = %s AND durable_writes = true" % RF1)
    q("SELECT keyspace_name, durable_writes, replication FROM system_schema.keyspaces WHERE keyspace_name = 'golden2'")
    q("ALTER KEYSPACE nosuch WITH durable_writes = true")
    q("ALTER KEYSPACE IF EXISTS nosuch WITH durable_writes = true")
    q("CREATE KEYSPACE bad1 WITH replication = {'class': 'SimpleStrategy'}")
    q("SELECT keyspace_name, replication FROM system_schema.keyspaces WHERE keyspace_name = 'bad1'")
    q("DROP KEYSPACE bad1")
    q("CREATE KEYSPACE bad2 WITH replication = {'class': 'NoSuchStrategy', 'replication_factor': 1}")
    q("CREATE KEYSPACE bad3")
    q("CREATE KEYSPACE bad4 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} AND nosuch = 1")
    q("CREATE KEYSPACE a23456789012345678901234567890123456789012345678x WITH replication = %s" % RF1)
    q("CREATE KEYSPACE \"bad-name\" WITH replication = %s" % RF1)
    q("CREATE KEYSPACE system WITH replication = %s" % RF1)
    q("DROP KEYSPACE golden2")
    q("DROP KEYSPACE golden2")
    q("DROP KEYSPACE IF EXISTS golden2")
    q("DROP KEYSPACE system")
    q("USE nosuch")
    q("USE golden")
    q("USE \"golden\"")

    # --- tables -----------------------------------------------------------------------
    q("CREATE TABLE kv (k int PRIMARY KEY, v text)")
    q("CREATE TABLE kv (k int PRIMARY KEY, v text)")
    q("CREATE TABLE IF NOT EXISTS kv (k int PRIMARY KEY, v text)")
    q("CREATE TABLE golden.ck (k int, c int, v text, PRIMARY KEY (k, c))")
    q("CREATE TABLE cpk (a int, b text, c int, v int, PRIMARY KEY ((a, b), c))")
    q("CREATE TABLE keyonly (k int, c int, PRIMARY KEY (k, c))")
    q("CREATE TABLE st (k int, c int, s text static, v int, PRIMARY KEY (k, c))")
    q("CREATE TABLE sel (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2)) "
      "WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC)")
    q("CREATE TABLE seld (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2)) "
      "WITH CLUSTERING ORDER BY (c1 DESC, c2 ASC)")
    q("CREATE TABLE types (k int PRIMARY KEY, b boolean, ti tinyint, si smallint, i int, bi bigint, "
      "f float, d double, t text, a ascii, bl blob, u uuid, tu timeuuid, ts timestamp, dt date, "
      "vi varint, de decimal, ip inet, vc varchar)")
    q("CREATE TABLE opts (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC) "
      "AND default_time_to_live = 100 AND gc_grace_seconds = 3600 AND comment = 'golden' "
      "AND compaction = {'class': 'LeveledCompactionStrategy', 'fanout_size': '8'} "
      "AND compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': '16'}")
    q("SELECT table_name, comment, default_time_to_live, gc_grace_seconds, compaction, compression "
      "FROM system_schema.tables WHERE keyspace_name = 'golden' AND table_name = 'opts'")
    q("SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns "
      "WHERE keyspace_name = 'golden' AND table_name = 'sel'")
    q("SELECT column_name, kind, position, clustering_order, type FROM system_schema.columns "
      "WHERE keyspace_name = 'golden' AND table_name = 'cpk'")
    q("CREATE TABLE bad (k int PRIMARY KEY, s int static)")
    q("CREATE TABLE bad (k int, v int)")
    q("CREATE TABLE bad (k int PRIMARY KEY, v int PRIMARY KEY)")
    q("CREATE TABLE bad (k int PRIMARY KEY, v int, PRIMARY KEY (k))")
    q("CREATE TABLE bad (k int PRIMARY KEY, v nosuchtype)")
    q("CREATE TABLE bad (k int, c int, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (v DESC)")
    q("CREATE TABLE bad (k int, c1 int, c2 int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c2 DESC, c1 ASC)")
    q("CREATE TABLE bad (k int, c1 int, c2 int, PRIMARY KEY (k, c1, c2)) WITH CLUSTERING ORDER BY (c2 DESC)")
    q("CREATE TABLE bad (k int PRIMARY KEY, v int, v text)")
    q("CREATE TABLE bad (k int, v int, PRIMARY KEY (x))")
    q("CREATE TABLE bad (k int PRIMARY KEY) WITH nosuch = 1")
    q("CREATE TABLE bad (k int PRIMARY KEY) WITH compaction = {'class': 'NoSuchStrategy'}")
    q("CREATE TABLE bad (k int PRIMARY KEY) WITH default_time_to_live = -1")
    q("CREATE TABLE bad (k int PRIMARY KEY) WITH gc_grace_seconds = -1")
    q("CREATE TABLE nosuch.t (k int PRIMARY KEY)")
    q("CREATE TABLE \"Quoted\" (\"K\" int PRIMARY KEY, \"Value\" text)")
    q("INSERT INTO \"Quoted\" (\"K\", \"Value\") VALUES (1, 'q')")
    q("SELECT * FROM \"Quoted\"")
    q("SELECT \"K\", \"Value\" AS \"V v\" FROM \"Quoted\"")
    q("SELECT K FROM \"Quoted\"")
    q("SELECT * FROM Quoted")
    q("ALTER TABLE kv ADD w int")
    q("ALTER TABLE kv ADD w int")
    q("ALTER TABLE kv ADD IF NOT EXISTS w int")
    q("ALTER TABLE kv ADD (x bigint, y text)")
    q("ALTER TABLE kv DROP x")
    q("ALTER TABLE kv DROP x")
    q("ALTER TABLE kv DROP IF EXISTS x")
    q("ALTER TABLE kv DROP k")
    q("ALTER TABLE kv ALTER v TYPE blob")
    q("ALTER TABLE kv RENAME v TO vv")
    q("ALTER TABLE ck RENAME c TO cc")
    q("SELECT column_name, kind FROM system_schema.columns WHERE keyspace_name = 'golden' AND table_name = 'ck'")
    q("ALTER TABLE ck RENAME cc TO c")
    q("ALTER TABLE kv WITH comment = 'altered' AND gc_grace_seconds = 10")
    q("SELECT comment, gc_grace_seconds FROM system_schema.tables WHERE keyspace_name = 'golden' AND table_name = 'kv'")
    q("ALTER TABLE nosuch ADD z int")
    q("ALTER TABLE IF EXISTS nosuch ADD z int")
    q("ALTER TABLE kv ADD s int static")
    q("ALTER TABLE kv DROP y")
    q("ALTER TABLE kv DROP w")
    q("SELECT * FROM kv")
    q("CREATE TABLE dropme (k int PRIMARY KEY)")
    q("DROP TABLE dropme")
    q("DROP TABLE dropme")
    q("DROP TABLE IF EXISTS dropme")
    q("DROP TABLE nosuch.dropme")
    q("DROP TABLE system.local")

    # --- writes with TTL / TIMESTAMP and their errors ---------------------------------------
    q("INSERT INTO kv (k, v) VALUES (1, 'one') USING TIMESTAMP 1000")
    q("INSERT INTO kv (k, v) VALUES (2, 'two') USING TTL 1000 AND TIMESTAMP 2000")
    q("INSERT INTO kv (k, v) VALUES (3, 'three') USING TIMESTAMP 3000 AND TTL 0")
    q("UPDATE kv USING TIMESTAMP 4000 SET v = 'four' WHERE k = 4")
    q("UPDATE kv USING TTL 2000 AND TIMESTAMP 5000 SET v = 'five' WHERE k IN (5, 6)")
    q("SELECT k, v, writetime(v), ttl(v) FROM kv WHERE k = 1")
    q("SELECT k, v, writetime(v), ttl(v) FROM kv WHERE k = 2", mask=["ttl(v)"])
    q("SELECT k, v, writetime(v), ttl(v) FROM kv WHERE k IN (3, 4, 5, 6)", mask=["ttl(v)"])
    q("DELETE FROM kv USING TIMESTAMP 500 WHERE k = 1")
    q("SELECT k, v FROM kv WHERE k = 1")
    q("DELETE v FROM kv USING TIMESTAMP 3001 WHERE k = 3")
    q("SELECT k, v, writetime(v) FROM kv WHERE k = 3")
    q("DELETE FROM kv USING TIMESTAMP 4001 WHERE k = 4")
    q("SELECT k, v FROM kv WHERE k = 4")
    q("INSERT INTO kv (k, v) VALUES (4, 'old') USING TIMESTAMP 4000")
    q("SELECT k, v FROM kv WHERE k = 4")
    q("INSERT INTO kv (k, v) VALUES (7, 'seven') USING TTL -1")
    q("INSERT INTO kv (k, v) VALUES (7, 'seven') USING TTL 630720001")
    q("INSERT INTO kv (k, v) VALUES (7, 'seven') USING TTL 630720000 AND TIMESTAMP 7000")
    q("SELECT k, v, writetime(v) FROM kv WHERE k = 7")
    q("INSERT INTO kv (k, v) VALUES (8, 'eight') USING TIMESTAMP -5")
    q("SELECT k, v, writetime(v) FROM kv WHERE k = 8")
    q("INSERT INTO kv (k, v) VALUES (8, 'eight') USING TIMESTAMP 1 AND TIMESTAMP 2")
    q("INSERT INTO kv (k, v) VALUES (null, 'x')")
    q("INSERT INTO kv (v) VALUES ('x')")
    q("INSERT INTO kv (k) VALUES (9)")
    q("SELECT * FROM kv WHERE k = 9")
    q("INSERT INTO kv (k, v) VALUES (1)")
    q("INSERT INTO kv (k, v) VALUES (1, 'a', 'b')")
    q("INSERT INTO kv (k, nosuch) VALUES (1, 'a')")
    q("INSERT INTO kv (k, v, v) VALUES (1, 'a', 'b')")
    q("INSERT INTO kv (k, v) VALUES ('x', 'y')")
    q("INSERT INTO kv (k, v) VALUES (1, 2)")
    q("INSERT INTO kv (k, v) VALUES (1.5, 'x')")
    q("UPDATE kv SET v = 'x'")
    q("UPDATE kv SET k = 2 WHERE k = 1")
    q("UPDATE kv SET v = 'x' WHERE v = 'y'")
    q("UPDATE kv SET v = 'x' WHERE k > 1")
    q("UPDATE kv SET nosuch = 'x' WHERE k = 1")
    q("DELETE FROM kv")
    q("DELETE FROM kv WHERE k > 1")
    q("DELETE k FROM kv WHERE k = 1")
    q("DELETE FROM kv USING TTL 10 WHERE k = 1")
    p("INSERT INTO kv (k, v) VALUES (?, ?)", [None, "x"])
    c.entries.append({"cql": "INSERT INTO kv (k, v) VALUES (?, ?)", "raw_values": [{"unset": True}, "0x78"]})
    p("INSERT INTO kv (k, v) VALUES (?, ?) USING TIMESTAMP ?", [10, "ten", 10000])
    p("INSERT INTO kv (k, v) VALUES (?, ?) USING TIMESTAMP ?", [10, UNSET_VALUE, 10001])
    q("SELECT k, v, writetime(v) FROM kv WHERE k = 10")
    p("INSERT INTO kv (k, v) VALUES (?, ?) USING TIMESTAMP ?", [10, None, 10002])
    q("SELECT k, v, writetime(v) FROM kv WHERE k = 10")
    p("INSERT INTO kv (k, v) VALUES (?, ?) USING TTL ?", [11, "x", -1])
    p("INSERT INTO kv (k, v) VALUES (?, ?) USING TTL ? AND TIMESTAMP ?", [11, "eleven", UNSET_VALUE, 11000])
    p("INSERT INTO kv (k, v) VALUES (?, ?) USING TTL ? AND TIMESTAMP ?", [12, "twelve", None, 12000])
    q("SELECT k, v, writetime(v), ttl(v) FROM kv WHERE k IN (11, 12)")
    p("INSERT INTO kv (k, v) VALUES (:key, :value) USING TIMESTAMP 13000", [13, "named"])
    p("SELECT k, v FROM kv WHERE k = ?", [13])
    p("SELECT k, v FROM kv WHERE k IN ?", [[13, 10, 1]])
    c.entries.append({"cql": "SELECT k, v FROM kv WHERE k = ?", "raw_values": [{"unset": True}]})
    p("SELECT k, v FROM kv WHERE k = ?", [None])
    p("SELECT k, v FROM kv WHERE k = ? LIMIT ?", [13, 0])
    c.entries.append({"cql": "INSERT INTO kv (k, v) VALUES (?, ?)", "raw_values": ["0x000001", "0x61"]})
    c.entries.append({"cql": "INSERT INTO kv (k, v) VALUES (?, ?)", "raw_values": ["0x0000000e", "0xff"]})
    c.entries.append({"cql": "INSERT INTO kv (k, v) VALUES (?, ?)", "raw_values": ["0x0000000e"]})
    c.entries.append({"cql": "INSERT INTO types (k, b) VALUES (?, ?)", "raw_values": ["0x00000001", "0x0001"]})
    c.entries.append({"cql": "INSERT INTO types (k, u) VALUES (?, ?)", "raw_values": ["0x00000001", "0x0102"]})
    c.entries.append({"cql": "INSERT INTO types (k, tu) VALUES (?, ?)",
                      "raw_values": ["0x00000001", "0x" + uuid.UUID("c3b6a3c2-1f3e-4c5d-8e9f-0a1b2c3d4e5f").hex]})
    c.entries.append({"cql": "INSERT INTO types (k, a) VALUES (?, ?)", "raw_values": ["0x00000001", "0xc3a9"]})
    c.entries.append({"cql": "INSERT INTO types (k, dt) VALUES (?, ?)", "raw_values": ["0x00000001", "0x0001"]})
    c.entries.append({"cql": "INSERT INTO types (k, vi) VALUES (?, ?)", "raw_values": ["0x00000001", "0x"]})
    c.entries.append({"cql": "INSERT INTO types (k, i) VALUES (?, ?)", "raw_values": ["0x00000001", "0x"]})
    c.entries.append({"cql": "INSERT INTO types (k, t) VALUES (?, ?)", "raw_values": ["0x00000001", "0x"]})
    q("SELECT k, i, t, vi FROM types WHERE k = 1")
    q("SELECT k, v FROM kv WHERE k = 14")

    # --- literals of every scalar type ------------------------------------------------
    q("INSERT INTO types (k, b, ti, si, i, bi, f, d, t, a, bl, u, tu, ts, dt, vi, de, ip, vc) VALUES "
      "(2, true, -128, -32768, -2147483648, -9223372036854775808, 1.5, -2.25, 'héllo', 'ascii', 0xCAFEbabe, "
      "5132b130-ae79-11e4-ab27-0800200c9a66, 5132b130-ae79-11e4-ab27-0800200c9a66, "
      "'2024-01-02 03:04:05.678+0000', '2024-01-02', 123456789012345678901234567890, 1.50, '192.168.0.1', 'vc')")
    q("INSERT INTO types (k, b, ti, si, i, bi, f, d, t, a, bl, u, tu, ts, dt, vi, de, ip) VALUES "
      "(3, false, 127, 32767, 2147483647, 9223372036854775807, NaN, Infinity, '', '', 0x, "
      "00000000-0000-0000-0000-000000000000, 00000000-0000-1000-8000-000000000000, 0, '1970-01-01', -1, -0.001E-10, '::1')")
    q("INSERT INTO types (k, f, d, ts, dt, de, ip) VALUES (4, -Infinity, -0.0, 1704164645678, 0, 1e3, '2001:db8::ff00:42:8329')")
    q("INSERT INTO types (k, ts, dt, de) VALUES (5, '2024-01-02T03:04:05Z', '-5877641-06-23', 12345678901234567890.123456789)")
    q("INSERT INTO types (k, ts, dt) VALUES (6, '2024-01-02 03:04:05+0100', '5881580-07-11')")
    q("INSERT INTO types (k, ts) VALUES (7, '2024-01-02')")
    q("SELECT * FROM types WHERE k IN (2, 3, 4, 5, 6, 7)")
    q("SELECT JSON * FROM types WHERE k IN (2, 3, 4)")
    q("INSERT INTO types (k, ti) VALUES (10, 128)")
    q("INSERT INTO types (k, si) VALUES (10, 32768)")
    q("INSERT INTO types (k, i) VALUES (10, 2147483648)")
    q("INSERT INTO types (k, bi) VALUES (10, 9223372036854775808)")
    q("INSERT INTO types (k, i) VALUES (10, 1.0)")
    q("INSERT INTO types (k, a) VALUES (10, 'é')")
    q("INSERT INTO types (k, dt) VALUES (10, '2024-13-01')")
    q("INSERT INTO types (k, ts) VALUES (10, 'yesterday')")
    q("INSERT INTO types (k, u) VALUES (10, 'not-a-uuid')")
    q("INSERT INTO types (k, tu) VALUES (10, c3b6a3c2-1f3e-4c5d-8e9f-0a1b2c3d4e5f)")
    q("INSERT INTO types (k, ip) VALUES (10, '300.1.1.1')")
    q("INSERT INTO types (k, bl) VALUES (10, 0xABC)")
    q("INSERT INTO types (k, bl) VALUES (10, 'text')")
    q("INSERT INTO types (k, b) VALUES (10, 'true')")
    q("INSERT INTO types (k, b) VALUES (10, 1)")
    q("INSERT INTO types (k, t) VALUES (10, 0x41)")
    p("INSERT INTO types (k, b, ti, si, i, bi, f, d, t, a, bl, u, tu, ts, dt, vi, de, ip) "
      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      [20, True, 7, 300, 70000, 1 << 40, 0.25, 1e100, "bound", "asc", b"\x00\x01",
       uuid.UUID("5132b130-ae79-11e4-ab27-0800200c9a66"), uuid.UUID("5132b130-ae79-11e4-ab27-0800200c9a66"),
       datetime.datetime(2001, 2, 3, 4, 5, 6, 789000), datetime.date(2001, 2, 3), -(10 ** 30),
       decimal.Decimal("-12.340"), ipaddress.ip_address("10.0.0.1")])
    q("SELECT * FROM types WHERE k = 20")
    q("SELECT JSON * FROM types WHERE k = 20")

    # --- static columns ---------------------------------------------------------------
    q("INSERT INTO st (k, s) VALUES (1, 'static only') USING TIMESTAMP 1000")
    q("SELECT * FROM st WHERE k = 1")
    q("SELECT k, c, s, v FROM st")
    q("SELECT c FROM st WHERE k = 1")
    q("SELECT v FROM st WHERE k = 1")
    q("SELECT count(*) FROM st WHERE k = 1")
    q("INSERT INTO st (k, c, v) VALUES (1, 1, 10) USING TIMESTAMP 1001")
    q("INSERT INTO st (k, c, s, v) VALUES (1, 2, 'static two', 20) USING TIMESTAMP 1002")
    q("SELECT k, c, s, v, writetime(s) FROM st WHERE k = 1")
    q("UPDATE st USING TIMESTAMP 1003 SET s = 'by update' WHERE k = 2")
    q("UPDATE st USING TIMESTAMP 1004 SET s = 'x' WHERE k = 2 AND c = 1")
    q("UPDATE st USING TIMESTAMP 1005 SET s = 'x', v = 1 WHERE k = 2")
    q("INSERT INTO st (k, c, s) VALUES (3, 1, 'x')")
    q("INSERT INTO st (k, c) VALUES (3, 1)")
    q("SELECT * FROM st WHERE k IN (2, 3)")
    q("SELECT DISTINCT k, s FROM st")
    q("SELECT DISTINCT k, v FROM st")
    q("SELECT * FROM st WHERE k = 1 AND c = 5")
    q("SELECT s FROM st WHERE k = 1 AND c = 5")
    q("DELETE FROM st USING TIMESTAMP 1010 WHERE k = 1 AND c = 1")
    q("DELETE FROM st USING TIMESTAMP 1010 WHERE k = 1 AND c = 2")
    q("SELECT * FROM st WHERE k = 1")
    q("DELETE s FROM st USING TIMESTAMP 1010 WHERE k = 1")
    q("SELECT * FROM st WHERE k = 1")
    q("DELETE s FROM st USING TIMESTAMP 1006 WHERE k = 2 AND c = 1")
    q("SELECT * FROM st WHERE s = 'by update' ALLOW FILTERING")

    # --- clustering data for reads and range deletes -------------------------------
    for table in ("sel", "seld"):
        for k in (1, 2, 3):
            q(batch(["INSERT INTO %s (k, c1, c2, v) VALUES (%d, %d, %d, %d)" % (table, k, a, b, 100 * k + 10 * a + b)
                     for a in range(3) for b in range(3)], ts=100))
    q("SELECT * FROM sel WHERE k = 1")
    q("SELECT * FROM seld WHERE k = 1")
    q("SELECT * FROM sel WHERE k IN (3, 1, 2)")
    q("SELECT * FROM sel WHERE k IN (3, 1, 3) AND c1 = 1")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 = 1")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 > 0")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 >= 1 AND c1 < 2")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 = 1 AND c2 > 0")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 = 1 AND c2 >= 0 AND c2 <= 1")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 = 1 AND c2 = 1")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND (c1, c2) > (1, 1)")
    q("SELECT k, c1, c2 FROM seld WHERE k = 1 AND (c1, c2) > (1, 1)")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND (c1, c2) >= (0, 2) AND (c1, c2) < (2, 1)")
    q("SELECT k, c1, c2 FROM seld WHERE k = 1 AND (c1, c2) >= (0, 2) AND (c1, c2) < (2, 1)")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND (c1, c2) <= (1, 0)")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND (c1) > (1)")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND (c1, c2) = (2, 2)")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND (c1, c2) IN ((2, 2), (0, 1))")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 IN (2, 0)")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 IN (0, 2) AND c2 IN (2, 0)")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 IN (0, 2) AND c2 > 0")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 > 0 AND c2 = 1")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c2 = 1")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c2 = 1 ALLOW FILTERING")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 > 1 AND c1 > 0")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 = 1 AND c1 = 2")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND (c1, c2) > (1, 1) AND c1 < 2")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 > 2")
    q("SELECT k, c1, c2 FROM sel WHERE c1 = 1")
    q("SELECT k, c1, c2 FROM sel WHERE c1 = 1 ALLOW FILTERING")
    q("SELECT k, c1, c2, v FROM sel WHERE v = 111")
    q("SELECT k, c1, c2, v FROM sel WHERE v = 111 ALLOW FILTERING")
    q("SELECT k, c1, c2, v FROM sel WHERE v > 220 ALLOW FILTERING")
    q("SELECT k, c1, c2, v FROM sel WHERE k = 2 AND v < 205 ALLOW FILTERING")
    q("SELECT k, c1, c2, v FROM sel WHERE v IN (101, 202) ALLOW FILTERING")
    q("SELECT * FROM sel WHERE k > 1")
    q("SELECT * FROM sel WHERE k > 1 ALLOW FILTERING")
    q("SELECT token(k), k FROM sel WHERE token(k) > token(1)")
    q("SELECT DISTINCT token(k), k FROM sel WHERE token(k) >= -9223372036854775808 AND token(k) <= 0")
    q("SELECT DISTINCT k FROM sel WHERE token(k) > token(1) AND token(k) < token(3)")
    q("SELECT DISTINCT k FROM sel WHERE token(k) = token(3)")
    q("SELECT k FROM sel WHERE token(k) > 0 AND k = 1")
    q("SELECT * FROM sel WHERE token(c1) > 0")
    q("SELECT * FROM cpk WHERE a = 1")
    q("SELECT * FROM cpk WHERE a = 1 ALLOW FILTERING")
    q("SELECT * FROM cpk WHERE b = 'x'")
    q("SELECT * FROM cpk WHERE a = 1 AND b = 'x' AND c = 1")
    q("SELECT * FROM cpk WHERE token(a) > 0")
    q("SELECT * FROM cpk WHERE token(a, b) > 0")
    q(batch(["INSERT INTO cpk (a, b, c, v) VALUES (%d, '%s', %d, %d)" % (a, b, cc, a * 100 + cc)
             for a in (1, 2) for b in ("x", "y") for cc in (1, 2)]))
    q("SELECT * FROM cpk WHERE a = 1 AND b IN ('y', 'x')")
    q("SELECT * FROM cpk WHERE a IN (2, 1) AND b IN ('y', 'x') AND c = 2")
    q("SELECT token(a, b), a, b FROM cpk WHERE a = 2 AND b = 'y' LIMIT 1")
    q("SELECT * FROM cpk")

    # --- ORDER BY, LIMIT, PER PARTITION LIMIT, DISTINCT ----------------------------
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 ORDER BY c1 DESC")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 ORDER BY c1 ASC, c2 DESC")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 ORDER BY c1 DESC, c2 ASC")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 = 1 ORDER BY c2 ASC")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 ORDER BY c2 DESC")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 ORDER BY c1 DESC, c2 DESC")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 ORDER BY v DESC")
    q("SELECT k, c1, c2 FROM sel ORDER BY c1 DESC")
    q("SELECT k, c1, c2 FROM sel WHERE k IN (2, 1) ORDER BY c1 DESC")
    q("SELECT k, c1, c2 FROM sel WHERE k IN (2, 1) ORDER BY c1 DESC", page_size=0)
    q("SELECT k, c1, c2 FROM sel WHERE k IN (2, 1) AND c1 = 0 ORDER BY c1 DESC, c2 ASC", page_size=0)
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND (c1, c2) > (1, 1) ORDER BY c1 DESC")
    q("SELECT k, c1, c2 FROM seld WHERE k = 1 AND c1 IN (0, 2) ORDER BY c1 ASC")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 LIMIT 2")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 ORDER BY c1 DESC LIMIT 4")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 LIMIT 0")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 LIMIT -1")
    q("SELECT k, c1, c2 FROM sel WHERE k IN (1, 2, 3) PER PARTITION LIMIT 1")
    q("SELECT k, c1, c2 FROM sel PER PARTITION LIMIT 2")
    q("SELECT k, c1, c2 FROM sel PER PARTITION LIMIT 2 LIMIT 3")
    q("SELECT k, c1, c2 FROM sel WHERE k = 1 AND c1 > 0 PER PARTITION LIMIT 2")
    q("SELECT k, c1, c2 FROM sel PER PARTITION LIMIT 0")
    q("SELECT DISTINCT k FROM sel")
    q("SELECT DISTINCT k FROM sel WHERE k IN (3, 1)")
    q("SELECT DISTINCT k, c1 FROM sel")
    q("SELECT DISTINCT c1 FROM sel")
    q("SELECT DISTINCT a FROM cpk")
    q("SELECT DISTINCT a, b FROM cpk")
    q("SELECT DISTINCT k FROM sel LIMIT 2")
    q("SELECT DISTINCT k FROM sel PER PARTITION LIMIT 1")

    # --- GROUP BY and aggregates ----------------------------------------------------
    q("SELECT k, c1, count(*) FROM sel WHERE k = 1 GROUP BY k, c1")
    q("SELECT k, count(*), max(v) FROM sel GROUP BY k")
    q("SELECT k, c1, c2, sum(v) FROM sel WHERE k = 2 GROUP BY c1")
    q("SELECT k, c1, min(v) FROM sel WHERE k IN (1, 3) GROUP BY k, c1")
    q("SELECT k, count(*) FROM sel GROUP BY c1")
    q("SELECT k, count(*) FROM sel GROUP BY k, c2")
    q("SELECT k, count(*) FROM sel GROUP BY v")
    q("SELECT k, c1, count(*) FROM sel WHERE k = 1 GROUP BY k, c1 LIMIT 2")
    q("SELECT k, c1, count(*) FROM sel GROUP BY k, c1 PER PARTITION LIMIT 1")
    q("SELECT k, c1, count(*) FROM sel WHERE k = 1 GROUP BY k, c1 ORDER BY c1 DESC")
    q("SELECT k, v FROM sel WHERE k = 1 GROUP BY k, c1")
    q("SELECT count(*) FROM sel")
    q("SELECT COUNT(*) AS n FROM sel WHERE k = 1")
    q("SELECT count(1) FROM sel WHERE k = 1")
    q("SELECT count(v), min(v), max(v), sum(v), avg(v) FROM sel WHERE k = 1")
    q("SELECT count(v), min(v), max(v), sum(v), avg(v) FROM sel WHERE k = 99")
    q("SELECT k, v, count(*) FROM sel WHERE k = 1")
    q("SELECT count(*), min(k) FROM sel WHERE k = 1 AND c1 = 2")
    q("SELECT sum(c1), avg(c2) FROM sel WHERE k = 1")
    q("SELECT max(nosuch) FROM sel")
    q("SELECT sum(k, v) FROM sel")
    q("CREATE TABLE agg (k int, c int, i int, bi bigint, ti tinyint, f float, d double, de decimal, "
      "vi varint, t text, ts timestamp, PRIMARY KEY (k, c))")
    q("SELECT count(*), count(i), min(i), max(i), sum(i), avg(i), sum(f), avg(d), sum(de), avg(de), "
      "min(t), max(ts) FROM agg")
    q(batch(["INSERT INTO agg (k, c, i, bi, ti, f, d, de, vi, t, ts) VALUES (1, 1, 2147483647, 1, 100, 0.5, 1.5, 1.10, 5, 'b', 1000)",
             "INSERT INTO agg (k, c, i, bi, ti, f, d, de, vi, t, ts) VALUES (1, 2, 1, 2, 100, 0.25, 2.25, 2.205, 6, 'a', 2000)",
             "INSERT INTO agg (k, c, i, bi, ti, f, d, de, vi, t) VALUES (1, 3, 2, 4, 1, 0.1, 3, 0.001, 7, 'c')",
             "INSERT INTO agg (k, c) VALUES (1, 4)"]))
    q("SELECT count(*), count(i), min(i), max(i), sum(i), avg(i) FROM agg WHERE k = 1")
    q("SELECT sum(bi), avg(bi), sum(ti), avg(ti), sum(vi), avg(vi) FROM agg WHERE k = 1")
    q("SELECT sum(f), avg(f), sum(d), avg(d), min(f), max(d) FROM agg WHERE k = 1")
    q("SELECT sum(de), avg(de), min(de), max(de) FROM agg WHERE k = 1")
    q("SELECT min(t), max(t), min(ts), max(ts), count(ts) FROM agg WHERE k = 1")
    q("SELECT avg(i) FROM agg WHERE k = 1 AND c IN (2, 3)")
    q("SELECT sum(t) FROM agg")

    # --- WRITETIME / MAXWRITETIME / TTL, CAST, functions, aliases, selector names ----
    q("INSERT INTO ck (k, c, v) VALUES (1, 1, 'a') USING TIMESTAMP 111 AND TTL 5000")
    q("INSERT INTO ck (k, c, v) VALUES (1, 2, 'b') USING TIMESTAMP 222")
    q("SELECT c, writetime(v), maxwritetime(v), ttl(v) FROM ck WHERE k = 1", mask=["ttl(v)"])
    q("SELECT WRITETIME(v) AS wt, TTL(v) AS t FROM ck WHERE k = 1 AND c = 2")
    q("SELECT writetime(c) FROM ck WHERE k = 1")
    q("SELECT ttl(k) FROM ck WHERE k = 1")
    q("SELECT maxwritetime(k) FROM ck WHERE k = 1")
    q("SELECT writetime(s), ttl(s) FROM st WHERE k = 2")
    q("SELECT max(writetime(v)) FROM ck WHERE k = 1")
    q("SELECT k, CAST(k AS text), CAST(k AS bigint), CAST(k AS double), CAST(k AS varint), CAST(k AS decimal) "
      "FROM kv WHERE k = 13")
    q("SELECT CAST(f AS int), CAST(d AS text), CAST(ts AS date), CAST(dt AS timestamp), CAST(de AS double), "
      "CAST(u AS text), CAST(b AS text), CAST(ip AS text) FROM types WHERE k = 2")
    q("SELECT CAST(k AS blob) FROM kv WHERE k = 13")
    q("SELECT CAST(v AS int) FROM kv WHERE k = 13")
    q("SELECT CAST(k AS nosuchtype) FROM kv WHERE k = 13")
    q("SELECT k, token(k) FROM kv WHERE k IN (1, 2, 3)")
    q("SELECT token(k) FROM ck WHERE k = 1 AND c = 1")
    q("SELECT token(v) FROM kv WHERE k = 1")
    q("SELECT toDate(ts), toTimestamp(dt), toUnixTimestamp(ts), toUnixTimestamp(dt), toTimestamp(tu), "
      "toDate(tu), toUnixTimestamp(tu) FROM types WHERE k = 2")
    q("SELECT now(), toTimestamp(now()), toDate(now()), toUnixTimestamp(now()), currentTimestamp(), "
      "currentDate(), currentTimeUUID(), uuid() FROM kv WHERE k = 13",
      mask=["system.now()", "system.totimestamp(system.now())", "system.todate(system.now())",
            "system.tounixtimestamp(system.now())", "system.currenttimestamp()", "system.currentdate()",
            "system.currenttimeuuid()", "system.uuid()"])
    q("SELECT dateOf(tu) FROM types WHERE k = 2")
    q("SELECT unixTimestampOf(tu) FROM types WHERE k = 2")
    q("SELECT minTimeuuid('2024-01-02 00:00:00+0000'), maxTimeuuid('2024-01-02 00:00:00+0000') FROM kv WHERE k = 13")
    q("SELECT intAsBlob(k), blobAsInt(intAsBlob(k)), textAsBlob(v), blobAsText(textAsBlob(v)), "
      "bigintAsBlob(7), blobAsBigint(0x0000000000000007) FROM kv WHERE k = 13")
    q("SELECT blobAsInt(0x0102) FROM kv WHERE k = 13")
    q("SELECT k AS key, v AS value FROM kv WHERE k = 13")
    q("SELECT k AS key FROM kv WHERE key = 13")
    q("SELECT k AS key, v AS key FROM kv WHERE k = 13")
    q("SELECT k, k, v FROM kv WHERE k = 13")
    q("SELECT 1 FROM kv WHERE k = 13")
    q("SELECT (int)1, (text)'x', (bigint)2 AS two FROM kv WHERE k = 13")
    q("SELECT k, (tinyint)1 FROM kv WHERE k = 13")
    q("SELECT abs(k), exp(CAST(k AS double)) FROM kv WHERE k = 13")
    q("SELECT nosuchfunction(k) FROM kv WHERE k = 13")
    q("SELECT * FROM kv WHERE k = 13 AND k = 14")

    # --- JSON --------------------------------------------------------------------------
    q("SELECT JSON * FROM kv WHERE k = 13")
    q("SELECT JSON k, v AS value FROM kv WHERE k = 13")
    q("SELECT JSON k, writetime(v), count(*) FROM kv WHERE k = 13")
    q("SELECT JSON * FROM \"Quoted\"")
    q("SELECT k, toJson(v), toJson(k) FROM kv WHERE k = 13")
    q("SELECT toJson(ts), toJson(dt), toJson(bl), toJson(de), toJson(u), toJson(ip), toJson(f) FROM types WHERE k = 2")
    q("INSERT INTO kv JSON '{\"k\": 30, \"v\": \"json\"}' USING TIMESTAMP 30000")
    q("INSERT INTO kv JSON '{\"k\": 30}' USING TIMESTAMP 30001")
    q("SELECT k, v, writetime(v) FROM kv WHERE k = 30")
    q("INSERT INTO kv JSON '{\"k\": 31, \"v\": \"keep\"}' USING TIMESTAMP 31000")
    q("INSERT INTO kv JSON '{\"k\": 31}' DEFAULT UNSET USING TIMESTAMP 31001")
    q("SELECT k, v, writetime(v) FROM kv WHERE k = 31")
    q("INSERT INTO kv JSON '{\"k\": 31}' DEFAULT NULL USING TIMESTAMP 31002")
    q("SELECT k, v FROM kv WHERE k = 31")
    q("INSERT INTO kv JSON '{\"k\": \"32\", \"v\": 5}'")
    q("INSERT INTO kv JSON '{\"k\": 32, \"v\": 5}'")
    q("INSERT INTO kv JSON '{\"k\": 33, \"nosuch\": 1}'")
    q("INSERT INTO kv JSON '{\"v\": \"no key\"}'")
    q("INSERT INTO kv JSON '{not json'")
    q("INSERT INTO kv JSON '[1, 2]'")
    q("INSERT INTO types JSON '{\"k\": 40, \"ts\": \"2024-01-02 03:04:05.678Z\", \"dt\": \"2024-01-02\", "
      "\"bl\": \"0xcafe\", \"de\": \"1.50\", \"vi\": 123456789012345678901234567890, \"f\": 1.5, \"ip\": \"::1\", "
      "\"u\": \"5132b130-ae79-11e4-ab27-0800200c9a66\", \"b\": true, \"ti\": 5}'")
    q("SELECT JSON k, ts, dt, bl, de, vi, f, ip, u, b, ti FROM types WHERE k = 40")
    q("INSERT INTO types JSON '{\"k\": 41, \"ts\": 1704164645678, \"de\": 1.5, \"bi\": \"12\", \"b\": \"false\"}'")
    q("SELECT k, ts, de, bi, b FROM types WHERE k = 41")
    q("INSERT INTO kv (k, v) VALUES (34, fromJson('\"from json\"'))")
    q("SELECT k, v FROM kv WHERE k = 34")
    p("INSERT INTO kv JSON ?", ['{"k": 35, "v": "bound json"}'])
    q("SELECT JSON * FROM kv WHERE k = 35")

    # --- lightweight transactions -------------------------------------------------------
    q("CREATE TABLE lwt (k int PRIMARY KEY, v int, w text)")
    q("INSERT INTO lwt (k, v) VALUES (1, 1) IF NOT EXISTS")
    q("INSERT INTO lwt (k, v) VALUES (1, 5) IF NOT EXISTS")
    q("UPDATE lwt SET v = 2 WHERE k = 1 IF EXISTS")
    q("UPDATE lwt SET v = 2 WHERE k = 99 IF EXISTS")
    q("UPDATE lwt SET v = 3 WHERE k = 1 IF v = 2")
    q("UPDATE lwt SET v = 4 WHERE k = 1 IF v = 2")
    q("UPDATE lwt SET v = 4 WHERE k = 99 IF v = 2")
    q("UPDATE lwt SET v = 4 WHERE k = 1 IF v IN (1, 3)")
    q("UPDATE lwt SET v = 5 WHERE k = 1 IF v > 10")
    q("UPDATE lwt SET v = 5 WHERE k = 1 IF v >= 4 AND w = null")
    q("UPDATE lwt SET w = 'set' WHERE k = 1 IF v = null")
    q("UPDATE lwt SET w = 'set' WHERE k = 1 IF v != 5")
    q("UPDATE lwt SET w = 'set' WHERE k = 1 IF w != 'x'")
    q("UPDATE lwt SET w = 'set2' WHERE k = 1 IF w = 'set' AND v = 5")
    q("SELECT * FROM lwt WHERE k = 1")
    q("DELETE FROM lwt WHERE k = 1 IF v = 4")
    q("DELETE w FROM lwt WHERE k = 1 IF v = 5")
    q("DELETE FROM lwt WHERE k = 1 IF EXISTS")
    q("DELETE FROM lwt WHERE k = 1 IF EXISTS")
    q("UPDATE lwt SET v = 1 WHERE k = 1 IF NOT EXISTS")
    q("INSERT INTO lwt (k, v) VALUES (1, 1) IF EXISTS")
    q("INSERT INTO lwt (k, v) VALUES (2, 1) USING TIMESTAMP 5 IF NOT EXISTS")
    q("UPDATE lwt SET v = 1 WHERE k IN (1, 2) IF v = 1")
    q("UPDATE lwt SET v = 1 WHERE k = 1 IF k = 1")
    q("UPDATE lwt SET v = 1 WHERE k = 1 IF nosuch = 1")
    q("INSERT INTO lwt (k, v, w) VALUES (3, 3, 'three') IF NOT EXISTS")
    q("SELECT k, v, w FROM lwt WHERE k = 3")
    p("UPDATE lwt SET v = ? WHERE k = ? IF v = ?", [30, 3, 3])
    p("UPDATE lwt SET v = ? WHERE k = ? IF v = ?", [31, 3, 3])
    q("CREATE TABLE lwtc (k int, c int, s int static, v int, PRIMARY KEY (k, c))")
    q("UPDATE lwtc SET s = 1 WHERE k = 1 IF s = null")
    q("UPDATE lwtc SET s = 2 WHERE k = 1 IF s = 5")
    q("INSERT INTO lwtc (k, c, v) VALUES (1, 1, 10) IF NOT EXISTS")
    q("UPDATE lwtc SET v = 11 WHERE k = 1 AND c = 1 IF s = 1 AND v = 10")
    q("UPDATE lwtc SET v = 12 WHERE k = 1 AND c = 1 IF s = 2 AND v = 11")
    q("DELETE FROM lwtc WHERE k = 1 AND c > 0 IF EXISTS")
    q(batch(["INSERT INTO lwtc (k, c, v) VALUES (1, 2, 20) IF NOT EXISTS",
             "UPDATE lwtc SET v = 13 WHERE k = 1 AND c = 1 IF v = 11"]))
    q(batch(["INSERT INTO lwtc (k, c, v) VALUES (1, 2, 21) IF NOT EXISTS",
             "UPDATE lwtc SET v = 14 WHERE k = 1 AND c = 1 IF v = 99"]))
    q(batch(["UPDATE lwtc SET s = 3 WHERE k = 1 IF s = 1",
             "INSERT INTO lwtc (k, c, v) VALUES (1, 3, 30)"]))
    q("SELECT * FROM lwtc WHERE k = 1")
    q(batch(["INSERT INTO lwtc (k, c, v) VALUES (1, 5, 50) IF NOT EXISTS",
             "INSERT INTO lwtc (k, c, v) VALUES (2, 5, 50) IF NOT EXISTS"]))
    q(batch(["INSERT INTO lwtc (k, c, v) VALUES (1, 6, 60) IF NOT EXISTS",
             "INSERT INTO lwt (k, v) VALUES (1, 1)"]))
    q(batch(["INSERT INTO lwtc (k, c, v) VALUES (1, 7, 70) IF NOT EXISTS"], kind="UNLOGGED"))
    q(batch(["INSERT INTO lwtc (k, c, v) VALUES (1, 8, 80) IF NOT EXISTS"], ts=1000))

    # --- batches ----------------------------------------------------------------------
    q("CREATE TABLE bt (k int, c int, v text, PRIMARY KEY (k, c))")
    q(batch(["INSERT INTO bt (k, c, v) VALUES (1, 1, 'a')", "INSERT INTO bt (k, c, v) VALUES (2, 1, 'b')",
             "UPDATE bt SET v = 'c' WHERE k = 3 AND c = 1", "DELETE FROM bt WHERE k = 4 AND c = 1"], ts=5000))
    q("SELECT k, c, v, writetime(v) FROM bt")
    q(batch(["INSERT INTO bt (k, c, v) VALUES (1, 2, 'd') USING TIMESTAMP 6000",
             "INSERT INTO bt (k, c, v) VALUES (1, 3, 'e') USING TIMESTAMP 6001"], kind="UNLOGGED"))
    q(batch(["INSERT INTO bt (k, c, v) VALUES (5, 1, 'f') USING TIMESTAMP 6000",
             "INSERT INTO bt (k, c, v) VALUES (6, 1, 'g') USING TIMESTAMP 6001"], kind="UNLOGGED"))
    q(batch(["INSERT INTO bt (k, c, v) VALUES (1, 4, 'h') USING TIMESTAMP 7000"], ts=7001))
    q(batch(["INSERT INTO bt (k, c, v) VALUES (1, 5, 'late') USING TIMESTAMP 100",
             "DELETE FROM bt USING TIMESTAMP 99 WHERE k = 1 AND c = 5"]))
    q(batch(["INSERT INTO bt (k, c, v) VALUES (1, 6, 'same') USING TIMESTAMP 100",
             "DELETE FROM bt USING TIMESTAMP 100 WHERE k = 1 AND c = 6"]))
    q("SELECT k, c, v, writetime(v) FROM bt WHERE k IN (1, 5, 6)")
    q("BEGIN BATCH SELECT * FROM bt; APPLY BATCH")
    q("BEGIN BATCH TRUNCATE bt; APPLY BATCH")
    q("BEGIN BATCH APPLY BATCH")
    q(batch(["INSERT INTO bt (k, c, v) VALUES (1, 1, 'x')", "INSERT INTO nosuch (k) VALUES (1)"]))
    q(batch(["INSERT INTO bt (k, c, v) VALUES (7, 1, 'x') USING TTL 100"], ts=8000))
    q(batch(["INSERT INTO bt (k, c, v) VALUES (7, 1, 'x')"], kind="COUNTER"))
    c.entries.append({"cql": "<protocol batch>", "batch_type": "LOGGED",
                      "batch": [["INSERT INTO bt (k, c, v) VALUES (?, ?, ?) USING TIMESTAMP 9000", [8, 1, "p1"]],
                                ["UPDATE bt USING TIMESTAMP 9000 SET v = ? WHERE k = ? AND c = ?", ["p2", 8, 2]]]})
    c.entries.append({"cql": "<protocol batch>", "batch_type": "UNLOGGED",
                      "batch": [["INSERT INTO bt (k, c, v) VALUES (?, ?, ?) USING TIMESTAMP 9001", [9, 1, "p3"]],
                                ["DELETE FROM bt USING TIMESTAMP 9002 WHERE k = ? AND c = ?", [8, 1]]]})
    q("SELECT k, c, v, writetime(v) FROM bt WHERE k IN (8, 9)")

    # --- range deletes ------------------------------------------------------------------
    q("CREATE TABLE rd (k int, c1 int, c2 int, v int, PRIMARY KEY (k, c1, c2))")
    for k in (1, 2):
        q(batch(["INSERT INTO rd (k, c1, c2, v) VALUES (%d, %d, %d, %d)" % (k, a, b, 10 * a + b)
                 for a in range(4) for b in range(4)], ts=100))
    q("DELETE FROM rd USING TIMESTAMP 200 WHERE k = 1 AND c1 = 1")
    q("DELETE FROM rd USING TIMESTAMP 200 WHERE k = 1 AND c1 = 2 AND c2 > 1")
    q("DELETE FROM rd USING TIMESTAMP 200 WHERE k = 1 AND c1 > 2")
    q("SELECT c1, c2 FROM rd WHERE k = 1")
    q("DELETE FROM rd USING TIMESTAMP 200 WHERE k = 2 AND c1 >= 1 AND c1 <= 2")
    q("DELETE FROM rd USING TIMESTAMP 200 WHERE k = 2 AND (c1, c2) >= (0, 2) AND (c1, c2) < (3, 1)")
    q("SELECT c1, c2 FROM rd WHERE k = 2")
    q("DELETE FROM rd WHERE k = 1 AND c2 = 1")
    q("DELETE FROM rd WHERE k = 1 AND c1 = 0 AND c2 IN (0, 1)")
    q("DELETE v FROM rd WHERE k = 1 AND c1 > 0")
    q("DELETE v FROM rd WHERE k = 1 AND c1 = 0")
    q("DELETE FROM rd WHERE c1 = 0")
    q("DELETE FROM rd USING TIMESTAMP 50 WHERE k IN (1, 2) AND c1 = 0")
    q("INSERT INTO rd (k, c1, c2, v) VALUES (1, 1, 1, 11) USING TIMESTAMP 199")
    q("INSERT INTO rd (k, c1, c2, v) VALUES (1, 1, 2, 12) USING TIMESTAMP 201")
    q("SELECT c1, c2, v FROM rd WHERE k = 1")
    q("DELETE FROM rd USING TIMESTAMP 300 WHERE k = 1")
    q("SELECT c1, c2, v FROM rd WHERE k = 1")
    q("SELECT k, c1, c2, v FROM rd")

    # --- paging ------------------------------------------------------------------------
    q("CREATE TABLE pg (k int, c int, v int, PRIMARY KEY (k, c))")
    q(batch(["INSERT INTO pg (k, c, v) VALUES (0, %d, %d)" % (i, i * i) for i in range(25)]))
    q("CREATE TABLE pp (k int PRIMARY KEY, v int)")
    q(batch(["INSERT INTO pp (k, v) VALUES (%d, %d)" % (i, -i) for i in range(30)]))
    q("SELECT * FROM pg WHERE k = 0", page_size=10)
    q("SELECT * FROM pg WHERE k = 0 ORDER BY c DESC", page_size=10)
    q("SELECT * FROM pg WHERE k = 0 AND c >= 3 LIMIT 15", page_size=10)
    q("SELECT * FROM pp", page_size=10)
    q("SELECT * FROM pp LIMIT 20", page_size=10)
    q("SELECT k FROM pp WHERE k IN (29, 3, 17, 0, 11)", page_size=2)
    q("SELECT DISTINCT k FROM pp", page_size=12)
    q("SELECT count(*) FROM pp", page_size=10)
    q("SELECT * FROM pp WHERE v < -25 ALLOW FILTERING", page_size=2)
    q("SELECT * FROM pg WHERE k = 0 AND c < 10", page_size=5)
    p("SELECT * FROM pg WHERE k = ? AND c >= ?", [0, 20], page_size=3)
    q("SELECT * FROM pp WHERE k = 1", page_size=0)
    q("SELECT k, v FROM pp WHERE k IN (3, 1, 2)")
    q("SELECT k, v FROM pp WHERE k IN (3, 1, 2, 1)")
    q("SELECT k, v FROM pp WHERE k IN ()")
    q("INSERT INTO pp (k, v) VALUES (-5, 5)")
    q("SELECT k, v FROM pp WHERE k IN (300, 3, -5, 1)")
    q("SELECT k, token(k) FROM pp WHERE k IN (-5, 1)")

    # --- TRUNCATE ------------------------------------------------------------------------
    q("TRUNCATE pp")
    q("SELECT count(*) FROM pp")
    q("TRUNCATE TABLE pg")
    q("SELECT * FROM pg WHERE k = 0")
    q("TRUNCATE nosuch")
    q("TRUNCATE nosuch.pg")

    # --- unknown names, type mismatches, syntax errors --------------------------------
    q("SELECT * FROM nosuch")
    q("SELECT * FROM nosuch.kv")
    q("SELECT nosuch FROM kv")
    q("SELECT * FROM kv WHERE nosuch = 1")
    q("SELECT * FROM kv WHERE k = 'x'")
    q("SELECT * FROM kv WHERE k = 1.5")
    q("SELECT * FROM kv WHERE v = 1 ALLOW FILTERING")
    q("SELECT * FROM kv WHERE k = ?")
    q("SELECT * FROM kv WHERE k = :k")
    q("INSERT INTO nosuch (k) VALUES (1)")
    q("UPDATE nosuch SET v = 1 WHERE k = 1")
    q("DELETE FROM nosuch WHERE k = 1")
    q("SELEC * FROM kv")
    q("SELECT * FROM kv WHERE")
    q("SELECT * FROM kv WHERE k = ")
    q("SELECT * FROM kv WHERE k = 1 AND")
    q("SELECT 'unterminated FROM kv")
    q("SELECT * FROM kv;;")
    q("SELECT * FROM kv LIMIT 'x'")
    q("SELECT * FROM kv LIMIT")
    q("INSERT INTO kv (k, v) VALUES (1, 'x'")
    q("INSERT INTO kv k, v VALUES (1, 'x')")
    q("CREATE TABLE (k int PRIMARY KEY)")
    q("DROP")
    q("FOO BAR")
    q("select k, v from KV where K = 13")
    q("SELECT * FROM kv WHERE k = 13 ALLOW FILTERING")
    q("SELECT k FROM kv WHERE k IN (1, 1)")
    q("SELECT k FROM kv WHERE token(k) > 0 AND token(k) < 0")
    q("SELECT k FROM kv WHERE k = -0")
    q("SELECT k, v FROM kv WHERE k = 0x00000001")
    q("SELECT k, v FROM kv WHERE k = 1 -- comment")
    q("SELECT k, v /* block */ FROM kv WHERE k = 13")
    q("SELECT k, v FROM kv WHERE k = 13 // comment")

    # --- drop everything ------------------------------------------------------------------
    q("DROP TABLE kv")
    q("SELECT * FROM kv")
    q("DROP KEYSPACE golden")
    q("SELECT * FROM ck")
    q("DROP KEYSPACE golden")
    return c.entries, ["golden", "golden2", "bad1"]


def datamodel():
    c = Corpus()
    q, p = c.q, c.p
    q("CREATE KEYSPACE golden_dm WITH replication = %s" % RF1)
    q("USE golden_dm")
    # collections
    q("CREATE TABLE coll (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>, "
      "fl frozen<list<int>>, fs frozen<set<int>>, fm frozen<map<int, text>>, t tuple<int, text>)")
    q("INSERT INTO coll (k, l, s, m, fl, fs, fm, t) VALUES (1, [3, 1, 2], {'b', 'a'}, {'y': 2, 'x': 1}, "
      "[1, 2], {2, 1}, {2: 'b', 1: 'a'}, (1, 'one')) USING TIMESTAMP 1000")
    q("SELECT * FROM coll WHERE k = 1")
    q("SELECT JSON * FROM coll WHERE k = 1")
    q("UPDATE coll USING TIMESTAMP 1001 SET l = l + [4], s = s + {'c'}, m['z'] = 3 WHERE k = 1")
    q("UPDATE coll USING TIMESTAMP 1001 SET l = [0] + l, s = s - {'a'}, m = m - {'x'} WHERE k = 1")
    q("UPDATE coll USING TIMESTAMP 1002 SET l[0] = 100 WHERE k = 1")
    q("UPDATE coll SET l[10] = 100 WHERE k = 1")
    q("DELETE l[1], m['y'] FROM coll USING TIMESTAMP 1003 WHERE k = 1")
    q("SELECT k, l, s, m FROM coll WHERE k = 1")
    q("SELECT k, m['z'], s['c'], m['a'..'y'], s['x'] FROM coll WHERE k = 1")
    q("SELECT l[0] FROM coll WHERE k = 1")
    q("SELECT writetime(l), writetime(fl), ttl(fl) FROM coll WHERE k = 1")
    q("SELECT maxwritetime(s) FROM coll WHERE k = 1")
    q("UPDATE coll SET fl = fl + [3] WHERE k = 1")
    q("INSERT INTO coll (k, l, s, m) VALUES (2, [], {}, {})")
    q("SELECT * FROM coll WHERE k = 2")
    q("SELECT * FROM coll WHERE s CONTAINS 'b' ALLOW FILTERING")
    q("SELECT * FROM coll WHERE m CONTAINS KEY 'z' ALLOW FILTERING")
    q("INSERT INTO coll (k, l) VALUES (3, [null])")
    q("INSERT INTO coll (k, m) VALUES (3, {'a': null})")
    q("INSERT INTO coll (k, t) VALUES (3, (1, 'x', 2))")
    q("INSERT INTO coll (k, t) VALUES (3, (1))")
    q("SELECT k, t FROM coll WHERE k = 3")
    p("INSERT INTO coll (k, l, s, m, t) VALUES (?, ?, ?, ?, ?)", [4, [1, 2], {"q"}, {"a": 1}, (7, "seven")])
    q("SELECT k, l, s, m, t FROM coll WHERE k = 4")
    q("CREATE TABLE bad (k int PRIMARY KEY, l list<list<int>>)")
    q("CREATE TABLE bad (k frozen<list<int>>, l list<int>, PRIMARY KEY (k, l))")
    q("CREATE TABLE fk (k frozen<list<int>> PRIMARY KEY, v int)")
    q("INSERT INTO fk (k, v) VALUES ([1, 2], 1)")
    q("SELECT * FROM fk WHERE k = [1, 2]")
    # counters
    q("CREATE TABLE cnt (k int PRIMARY KEY, c counter)")
    q("CREATE TABLE bad (k int PRIMARY KEY, c counter, v int)")
    q("UPDATE cnt SET c = c + 5 WHERE k = 1")
    q("UPDATE cnt SET c = c - 2 WHERE k = 1")
    q("UPDATE cnt SET c = c + 1 WHERE k IN (1, 2)")
    q("SELECT * FROM cnt WHERE k IN (1, 2)")
    q("INSERT INTO cnt (k, c) VALUES (3, 1)")
    q("UPDATE cnt SET c = 5 WHERE k = 1")
    q("UPDATE cnt USING TTL 10 SET c = c + 1 WHERE k = 1")
    q("UPDATE cnt USING TIMESTAMP 10 SET c = c + 1 WHERE k = 1")
    q("UPDATE cnt SET c = c + 1 WHERE k = 1 IF c = 4")
    q("SELECT writetime(c) FROM cnt WHERE k = 1", mask=["writetime(c)"])
    q("SELECT sum(c), count(c) FROM cnt")
    q(batch(["UPDATE cnt SET c = c + 1 WHERE k = 1", "UPDATE cnt SET c = c + 1 WHERE k = 4"], kind="COUNTER"))
    q(batch(["UPDATE cnt SET c = c + 1 WHERE k = 1"]))
    q("SELECT * FROM cnt")
    q("DELETE FROM cnt WHERE k = 4")
    q("SELECT * FROM cnt WHERE k = 4")
    # UDTs
    q("CREATE TYPE addr (street text, nr int)")
    q("CREATE TYPE addr (street text)")
    q("CREATE TABLE people (k int PRIMARY KEY, a frozen<addr>, b addr)")
    q("INSERT INTO people (k, a, b) VALUES (1, {street: 'main', nr: 1}, {street: 'side'}) USING TIMESTAMP 10")
    q("SELECT * FROM people WHERE k = 1")
    q("SELECT a.street, b.nr FROM people WHERE k = 1")
    q("SELECT JSON * FROM people WHERE k = 1")
    q("UPDATE people SET b.nr = 5 WHERE k = 1")
    q("UPDATE people SET a.nr = 5 WHERE k = 1")
    q("SELECT b FROM people WHERE k = 1")
    q("INSERT INTO people (k, a) VALUES (2, {nosuch: 1})")
    q("ALTER TYPE addr ADD zip text")
    q("SELECT * FROM people WHERE k = 1")
    q("DROP TYPE addr")
    q("SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = 'golden_dm'")
    # time and duration
    q("CREATE TABLE td (k int PRIMARY KEY, t time, d duration)")
    q("INSERT INTO td (k, t, d) VALUES (1, '13:14:15.123456789', 1y2mo3w4d5h6m7s8ms9us10ns)")
    q("INSERT INTO td (k, t, d) VALUES (2, 0, P1Y2M3DT4H5M6S)")
    q("INSERT INTO td (k, t, d) VALUES (3, '23:59:59.999999999', -2d)")
    q("INSERT INTO td (k, t) VALUES (4, '24:00:00')")
    q("INSERT INTO td (k, d) VALUES (4, 1mo-2d)")
    q("SELECT * FROM td")
    q("SELECT JSON * FROM td WHERE k IN (1, 2, 3)")
    q("SELECT k, toJson(t), toJson(d) FROM td WHERE k = 1")
    q("CREATE TABLE bad (k duration PRIMARY KEY)")
    q("CREATE TABLE tdc (k int, t time, PRIMARY KEY (k, t))")
    q("INSERT INTO tdc (k, t) VALUES (1, '10:00:00')")
    q("INSERT INTO tdc (k, t) VALUES (1, '09:00:00')")
    q("SELECT * FROM tdc WHERE k = 1 AND t > '09:30:00'")
    q("SELECT ts + 1d, dt - 1mo FROM (SELECT 1)")
    q("CREATE TABLE arith (k int PRIMARY KEY, ts timestamp, dt date, i int)")
    q("INSERT INTO arith (k, ts, dt, i) VALUES (1, '2024-01-31 00:00:00+0000', '2024-01-31', 7)")
    q("SELECT ts + 1d, ts - 1h, dt + 1mo, dt - 2d FROM arith WHERE k = 1")
    q("SELECT i * 3, i / 2, i - 10, i + 1 FROM arith WHERE k = 1")
    q("SELECT -i FROM arith WHERE k = 1")
    q("SELECT i * 3, i / 2, i - 10, -i FROM arith WHERE k = 1")
    q("SELECT i % 4 FROM arith WHERE k = 1")
    q("SELECT * FROM arith WHERE ts > '2024-01-01' - 1d ALLOW FILTERING")
    q("DROP KEYSPACE golden_dm")
    datamodel_phases(c)
    datamodel_numbers(c)
    return c.entries, ["golden_dm", "golden_dm2", "golden_dm3"]


def datamodel_numbers(c):
    """Negation, varint and decimal arithmetic in the select clause, and one-element
    parentheses (a tuple for a tuple receiver, the element for any other)."""
    q = c.q
    q("CREATE KEYSPACE golden_dm3 WITH replication = %s" % RF1)
    q("USE golden_dm3")
    q("CREATE TABLE num (k int PRIMARY KEY, i int, v int, b bigint, f float, d double, vi varint, "
      "de decimal, s smallint, ti tinyint, t frozen<tuple<int, text>>)")
    q("INSERT INTO num (k, i, v, b, f, d, vi, de, s, ti, t) VALUES "
      "(1, 7, 5, -9, 1.5, 2.5, 12345678901234567890, 1.25, -32768, -128, (1))")
    q("INSERT INTO num (k, b, de, v, s, ti, f, vi) VALUES (9, 1234567, 1.5, 2, 3, 4, 0.1, 10)")
    q("INSERT INTO num (k, de, vi) VALUES (10, -2.5, -7)")
    for sel, k in [
        ("-v, - v, - - v, -(v + 1), -v * 2, -(v * 2), - v - 1, -v + 3, -s, -ti", 1),
        ("-b, -f, -d, -vi, -de, -k", 1),
        ("-v AS n", 1),
        ("-t", 1),
        ("-1", 1),
        ("vi + 1, de * 2, vi - vi, de / 4", 1),
        ("v + vi, de + v, d + de, f + de, i / vi, b + de", 1),
        ("vi + f, vi + d, vi + de, vi + b, vi + ti, f + vi", 1),
        ("de - 1, de % 1, vi % 7, de * de, de / de, de % de", 1),
        ("vi / 7, vi / -7, -vi / 7, -vi % 7, vi % -7, vi * vi * vi", 1),
        ("de / 7, de / 8, de * 0.1, de + 0.001, de - 5.125, de + 1e3, de * 1e-3", 1),
        ("de / f, de * d, d / de, f / de, i / de, de / i", 1),
        ("de % 0.3, -de % 0.3, de % -0.3, vi * 2.5, vi / 2.0, vi + 1.5", 1),
        ("de / 0", 1),
        ("de / 0.0", 1),
        ("de % 0", 1),
        ("vi % 0", 1),
        ("i / 0", 1),
        ("i % 0", 1),
        ("d / 0", 1),
        ("de * v, de * b, de * s, de * ti, de * f, de * 20, vi * f, vi + b", 9),
        ("de + 100, de * 100, de * 1e2, de / 3, 1 / de, vi / 3", 9),
        ("v / de, vi / de, de / vi, vi * de, vi - de", 9),
        ("vi / 1.0, vi / 0.5, de / 0.5, de / 0.015, de / 1e-40, de / 7e10, de * 1e300", 9),
        ("de / 3e-40, de / 3e40", 9),
        ("de / 3, de / 7, de % 3, de % -3, vi % 3, vi / 2, de / 0.4, de / 6, de / 0.6", 10),
    ]:
        q("SELECT %s FROM num WHERE k = %d" % (sel, k))
    q("SELECT i FROM num WHERE k = (1)")
    q("UPDATE num SET v = (1 + 2) * 3 WHERE k = 2")
    q("INSERT INTO num (k, v, b) VALUES (3, (5), (2) * (4))")
    q("SELECT k, v, b, t FROM num WHERE k IN ((1), 2, 3)")
    q("SELECT k FROM num WHERE t = (1) ALLOW FILTERING")
    q("UPDATE num SET t = ((1), 'x') WHERE k = 4")
    q("SELECT t FROM num WHERE k = 4")
    q("DROP KEYSPACE golden_dm3")


def datamodel_phases(c):
    """Collections, static collections, frozen keys, UDTs, counters, time/duration/vector,
    each group of writes read back after the writes, a restart, a flush and a compaction."""
    q, p = c.q, c.p
    ks = "golden_dm2"
    q("CREATE KEYSPACE %s WITH replication = %s" % (ks, RF1))
    q("USE %s" % ks)

    # --- schema -----------------------------------------------------------------------
    q("CREATE TYPE pt (x int, y int)")
    q("CREATE TYPE addr (street text, nr int)")
    q("CREATE TYPE unused (a int)")
    q("DROP TYPE unused")
    q("CREATE TYPE dur (d duration)")
    q("CREATE TABLE c (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>, "
      "fl frozen<list<int>>, fs frozen<set<text>>, fm frozen<map<text, int>>)")
    q("CREATE TABLE st (k int, c int, v int, sm map<text, int> static, ss set<int> static, PRIMARY KEY (k, c))")
    q("CREATE TABLE fpk (k frozen<map<text, int>> PRIMARY KEY, v int)")
    q("CREATE TABLE tpk (k tuple<int, text>, c int, v int, PRIMARY KEY (k, c))")
    q("CREATE TABLE upk (k frozen<pt> PRIMARY KEY, v int)")
    q("CREATE TABLE fck (k int, c frozen<list<int>>, v int, PRIMARY KEY (k, c))")
    q("CREATE TABLE fckd (k int, c frozen<list<int>>, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
    q("CREATE TABLE fsc (k int, c frozen<set<text>>, v int, PRIMARY KEY (k, c))")
    q("CREATE TABLE fmc (k int, c frozen<map<int, text>>, v int, PRIMARY KEY (k, c))")
    q("CREATE TABLE tc (k int, c tuple<int, text>, v int, PRIMARY KEY (k, c))")
    q("CREATE TABLE uc (k int, c frozen<pt>, v int, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)")
    q("CREATE TABLE nest (k int PRIMARY KEY, a map<text, frozen<list<int>>>, b list<frozen<map<int, text>>>, "
      "c frozen<map<text, frozen<list<int>>>>, d set<frozen<list<int>>>)")
    q("CREATE TABLE u (k int PRIMARY KEY, fa frozen<addr>, na addr, la list<frozen<addr>>, "
      "ma map<text, frozen<addr>>, sa set<frozen<addr>>)")
    q("CREATE TABLE cn (k int PRIMARY KEY, a counter, b counter)")
    q("CREATE TABLE cnc (k int, c int, n counter, PRIMARY KEY (k, c))")
    q("CREATE TABLE tv (k int PRIMARY KEY, t time, d duration, v vector<float, 3>, vi vector<int, 2>)")
    # refused definitions
    q("CREATE TABLE bad (k int, c counter, PRIMARY KEY (k, c))")
    q("CREATE TABLE bad (k counter PRIMARY KEY, v int)")
    q("CREATE TABLE bad (k int PRIMARY KEY, l list<counter>)")
    q("CREATE TABLE bad (k int PRIMARY KEY, a counter) WITH default_time_to_live = 10")
    q("ALTER TABLE cn ADD v int")
    q("ALTER TABLE c ADD n counter")
    q("CREATE TABLE bad (k int, d duration, PRIMARY KEY (k, d))")
    q("CREATE TABLE bad (k int PRIMARY KEY, s set<duration>)")
    q("CREATE TABLE bad (k int PRIMARY KEY, m map<duration, int>)")
    q("CREATE TABLE bad (k int, c frozen<list<duration>>, PRIMARY KEY (k, c))")
    q("CREATE TABLE bad (k int, c frozen<dur>, PRIMARY KEY (k, c))")
    q("CREATE TABLE bad (k int, c tuple<int, duration>, PRIMARY KEY (k, c))")
    q("CREATE TABLE bad (k int PRIMARY KEY, v vector<float, 0>)")
    q("CREATE TABLE bad (k int, c list<int>, PRIMARY KEY (k, c))")
    q("CREATE TABLE bad (k int, c addr, PRIMARY KEY (k, c))")

    # --- group A: non-frozen collections ----------------------------------------------
    # INSERT of a whole collection = a deletion of the column at timestamp-1 + the elements
    q("INSERT INTO c (k, l, s, m) VALUES (1, [1, 2], {'a', 'b'}, {'a': 1, 'b': 2}) USING TIMESTAMP 1000")
    q("INSERT INTO c (k, l, s, m) VALUES (1, [3], {'c'}, {'c': 3}) USING TIMESTAMP 2000")
    q("INSERT INTO c (k, l, s, m) VALUES (2, [1, 2], {'a', 'b'}, {'a': 1, 'b': 2}) USING TIMESTAMP 2000")
    q("INSERT INTO c (k, l, s, m) VALUES (2, [3], {'b', 'c'}, {'a': 10, 'c': 3}) USING TIMESTAMP 1000")
    q("INSERT INTO c (k, l, s, m, fl, fm) VALUES (3, [1], {'a'}, {'a': 1}, [1, 2], {'f': 1}) USING TIMESTAMP 1000")
    q("UPDATE c USING TIMESTAMP 999 SET l = l + [99], s = s + {'old'}, m['old'] = 99 WHERE k = 3")
    q("UPDATE c USING TIMESTAMP 998 SET m['older'] = 98 WHERE k = 3")
    q("UPDATE c USING TIMESTAMP 1000 SET l = l + [2], s = s + {'same'}, m['same'] = 2 WHERE k = 3")
    q("UPDATE c USING TIMESTAMP 1500 SET s = {'set'} WHERE k = 3")
    q("UPDATE c USING TIMESTAMP 1499 SET s = s + {'x1499'} WHERE k = 3")
    q("UPDATE c USING TIMESTAMP 1500 SET s = s + {'x1500'} WHERE k = 3")
    # element operations, in order (timestamps from the client)
    q("INSERT INTO c (k, l, s, m) VALUES (4, [1, 2, 3], {'a', 'b'}, {'a': 1, 'b': 2})")
    q("UPDATE c SET l = l + [4, 5] WHERE k = 4")
    q("UPDATE c SET l = [-1, 0] + l WHERE k = 4")
    q("UPDATE c SET l[2] = 10 WHERE k = 4")
    q("DELETE l[0] FROM c WHERE k = 4")
    q("UPDATE c SET l = l - [3, 4] WHERE k = 4")
    q("UPDATE c SET s = s + {'c', 'd'} WHERE k = 4")
    q("UPDATE c SET s = s - {'a', 'zz'} WHERE k = 4")
    q("UPDATE c SET m = m + {'c': 3, 'a': 100} WHERE k = 4")
    q("UPDATE c SET m = m - {'b', 'zz'} WHERE k = 4")
    q("UPDATE c SET m['d'] = 4, m['e'] = 5 WHERE k = 4")
    q("DELETE m['c'] FROM c WHERE k = 4")
    q("UPDATE c SET m['e'] = null WHERE k = 4")
    q("SELECT l, s, m FROM c WHERE k = 4")
    q("UPDATE c SET l[4] = 1 WHERE k = 4")
    q("DELETE l[4] FROM c WHERE k = 4")
    q("UPDATE c SET l[-1] = 1 WHERE k = 4")
    q("UPDATE c SET l[null] = 1 WHERE k = 4")
    q("UPDATE c SET m[null] = 1 WHERE k = 4")
    q("DELETE m[null] FROM c WHERE k = 4")
    q("UPDATE c SET l = l + [null] WHERE k = 4")
    q("UPDATE c SET s = s + {null} WHERE k = 4")
    q("UPDATE c SET m = m + {'x': null} WHERE k = 4")
    q("UPDATE c SET l[0] = 1 WHERE k = 100")
    q("DELETE l[0] FROM c WHERE k = 100")
    q("UPDATE c SET fl[0] = 1 WHERE k = 3")
    q("UPDATE c SET fm['a'] = 1 WHERE k = 3")
    q("UPDATE c SET fm = fm + {'a': 1} WHERE k = 3")
    q("DELETE fl[0] FROM c WHERE k = 3")
    q("UPDATE c SET m = m + ['x'] WHERE k = 4")
    q("UPDATE c SET s = s + ['x'] WHERE k = 4")
    q("UPDATE c SET l = l + {1} WHERE k = 4")
    q("UPDATE c SET m['a'] = 'text' WHERE k = 4")
    # whole-column deletions, empty collections
    q("INSERT INTO c (k, l, s, m, fl) VALUES (5, [1], {'a'}, {'a': 1}, [1])")
    q("DELETE s FROM c WHERE k = 5")
    q("UPDATE c SET l = [] WHERE k = 5")
    q("UPDATE c SET m = null WHERE k = 5")
    q("UPDATE c SET l[0] = 1 WHERE k = 5")
    q("INSERT INTO c (k, l, s, m, fl, fs, fm) VALUES (6, [], {}, {}, [], {}, {})")
    q("INSERT INTO c (k, s) VALUES (7, {'a'})")
    q("UPDATE c SET s = s - {'a'} WHERE k = 7")
    q("UPDATE c SET s = s + {'only'} WHERE k = 11")
    q("UPDATE c SET s = s - {'only'} WHERE k = 11")
    # element TTL
    q("INSERT INTO c (k, l, m) VALUES (8, [1], {'a': 1}) USING TIMESTAMP 1000")
    q("UPDATE c USING TTL 86400 AND TIMESTAMP 1001 SET m['t'] = 2 WHERE k = 8")
    q("UPDATE c USING TTL 1 SET m['e'] = 3, l = l + [2] WHERE k = 8")
    q("UPDATE c USING TTL 86400 AND TIMESTAMP 1002 SET fm = {'f': 1} WHERE k = 8")
    q("UPDATE c USING TTL 1 SET m['x'] = 1 WHERE k = 9")
    q("UPDATE c USING TTL 86400 AND TIMESTAMP 1003 SET m = m + {'p': 1, 'q': 2} WHERE k = 10")
    q("INSERT INTO c (k, fl) VALUES (12, [1]) USING TTL 1")
    c.d("sleep", seconds=3)
    p("INSERT INTO c (k, l, s, m, fm) VALUES (?, ?, ?, ?, ?)",
      [20, [5, 4], ["z", "y"], {"b": 2, "a": 1}, {"f": 6}])
    p("UPDATE c SET l = l + ?, m[?] = ? WHERE k = ?", [[6], "c", 3, 20])
    p("UPDATE c SET l[?] = ? WHERE k = ?", [0, 50, 20])

    # --- static collections -----------------------------------------------------------
    q("INSERT INTO st (k, c, v, sm) VALUES (1, 1, 10, {'a': 1}) USING TIMESTAMP 1000")
    q("INSERT INTO st (k, c, v) VALUES (1, 2, 20)")
    q("UPDATE st SET sm['b'] = 2 WHERE k = 1")
    q("UPDATE st USING TIMESTAMP 1100 SET sm = sm + {'c': 3}, ss = ss + {5, 1} WHERE k = 2")
    q("DELETE sm['a'] FROM st WHERE k = 1")
    q("UPDATE st SET sm['x'] = 1 WHERE k = 1 AND c = 1")
    q("INSERT INTO st (k, sm) VALUES (3, {'z': 26})")
    q("INSERT INTO st (k, c, sm) VALUES (1, 3, {'new': 1}) USING TIMESTAMP 999")
    q("UPDATE st SET ss = ss + {3} WHERE k = 3")
    q("DELETE ss FROM st WHERE k = 3")

    # --- frozen collections, tuples and UDTs as keys --------------------------------------
    for i, key in enumerate(["{'a': 1}", "{'a': 1, 'b': 2}", "{}", "{'b': 0}", "{'': -1}"]):
        q("INSERT INTO fpk (k, v) VALUES (%s, %d)" % (key, i))
    for i, key in enumerate(["(1, 'a')", "(1, 'b')", "(-1, '')", "(0, null)", "(null, null)"]):
        q("INSERT INTO tpk (k, c, v) VALUES (%s, %d, %d)" % (key, i % 2, i))
    q("INSERT INTO tpk (k, c, v) VALUES ((1, 'a'), 5, 5)")
    for i, key in enumerate(["{x: 1, y: 2}", "{x: 1}", "{y: 1}", "{x: -1, y: 0}"]):
        q("INSERT INTO upk (k, v) VALUES (%s, %d)" % (key, i))
    fck_keys = ["[]", "[1]", "[1, 1]", "[1, 2]", "[2]", "[-1]", "[1, 2, 3]", "[0, 100]"]
    for i, key in enumerate(fck_keys):
        q("INSERT INTO fck (k, c, v) VALUES (1, %s, %d)" % (key, i))
        q("INSERT INTO fckd (k, c, v) VALUES (1, %s, %d)" % (key, i))
    for i, key in enumerate(["{'b'}", "{'a', 'c'}", "{'a'}", "{}", "{'a', 'b'}", "{'B'}"]):
        q("INSERT INTO fsc (k, c, v) VALUES (1, %s, %d)" % (key, i))
    for i, key in enumerate(["{1: 'b'}", "{1: 'a'}", "{1: 'a', 2: 'a'}", "{0: 'z'}", "{2: ''}", "{-1: 'a', 5: 'a'}"]):
        q("INSERT INTO fmc (k, c, v) VALUES (1, %s, %d)" % (key, i))
    for i, key in enumerate(["(1, 'b')", "(1, 'a')", "(0, 'z')", "(2, '')", "(1, null)", "(-5, 'x')",
                             "(null, 'a')", "(1, '')"]):
        q("INSERT INTO tc (k, c, v) VALUES (1, %s, %d)" % (key, i))
    p("INSERT INTO tc (k, c, v) VALUES (?, ?, ?)", [1, (3, "p"), 8])
    for i, key in enumerate(["{x: 1, y: 2}", "{x: 1, y: -1}", "{x: 0, y: 9}", "{x: 1}", "{x: 2, y: 0}", "{y: 5}"]):
        q("INSERT INTO uc (k, c, v) VALUES (1, %s, %d)" % (key, i))
    q("INSERT INTO fck (k, c, v) VALUES (1, null, 9)")
    q("INSERT INTO fck (k, c, v) VALUES (1, [null], 9)")
    q("INSERT INTO tc (k, c, v) VALUES (1, (1, 'a', 2), 9)")
    q("INSERT INTO fpk (k, v) VALUES (null, 9)")
    q("SELECT * FROM fck WHERE k = 1 AND c > [1] ORDER BY c DESC")
    q("SELECT * FROM tc WHERE k = 1 AND c > (1, null)")
    q("SELECT * FROM fck WHERE k = 1 AND c CONTAINS 1 ALLOW FILTERING")
    q("SELECT * FROM uc WHERE k = 1 AND c.x = 1 ALLOW FILTERING")
    # nested frozen
    q("INSERT INTO nest (k, a, b, c, d) VALUES (1, {'x': [1, 2], 'y': []}, [{1: 'a', 0: 'z'}, {}], "
      "{'p': [3], 'q': [1, 1]}, {[2], [1, 5], [1]})")
    q("UPDATE nest SET a['z'] = [9] WHERE k = 1")
    q("UPDATE nest SET a = a - {'x'} WHERE k = 1")
    q("UPDATE nest SET b = b + [{2: 'b'}] WHERE k = 1")
    q("UPDATE nest SET d = d - {[1]} WHERE k = 1")
    q("UPDATE nest SET a['y'] = a['y'] + [1] WHERE k = 1")
    p("INSERT INTO nest (k, a, b, d) VALUES (?, ?, ?, ?)",
      [2, {"k": [1, 2]}, [{3: "c"}], [[1], [0, 0]]])

    # --- UDTs ---------------------------------------------------------------------------
    q("INSERT INTO u (k, fa, na, la, ma, sa) VALUES (1, {street: 'main', nr: 1}, {street: 'side', nr: 2}, "
      "[{street: 'a', nr: 1}], {'home': {street: 'h', nr: 3}}, {{street: 'b'}, {street: 'a', nr: 2}, {nr: 1}}) "
      "USING TIMESTAMP 1000")
    q("UPDATE u USING TIMESTAMP 1001 SET na.nr = 20 WHERE k = 1")
    q("UPDATE u USING TIMESTAMP 999 SET na.street = 'old' WHERE k = 1")
    q("DELETE na.street FROM u USING TIMESTAMP 1002 WHERE k = 1")
    q("UPDATE u SET ma['work'] = {street: 'w', nr: 4}, la = la + [{street: 'b', nr: 2}] WHERE k = 1")
    q("UPDATE u SET na.street = 'only' WHERE k = 2")
    q("INSERT INTO u (k, na) VALUES (3, {street: 'x'})")
    q("UPDATE u SET na = {nr: 7} WHERE k = 3")
    q("INSERT INTO u (k, na) VALUES (4, {street: 'gone', nr: 4})")
    q("DELETE na.street, na.nr FROM u WHERE k = 4")
    q("UPDATE u SET fa.nr = 5 WHERE k = 1")
    q("DELETE fa.nr FROM u WHERE k = 1")
    q("UPDATE u SET na.nosuch = 1 WHERE k = 1")
    q("UPDATE u SET ma['home'].nr = 1 WHERE k = 1")
    q("SELECT ma['home'].street FROM u WHERE k = 1")
    p("INSERT INTO u (k, fa, na, la) VALUES (?, ?, ?, ?)", [6, ("bound", 6), ("nf", None), [("l", 1)]])
    p("UPDATE u SET na.nr = ? WHERE k = ?", [66, 6])
    q("ALTER TYPE addr ADD zip text")
    q("ALTER TYPE addr ADD zip text")
    q("ALTER TYPE addr ALTER nr TYPE bigint")
    q("INSERT INTO u (k, fa, na) VALUES (5, {street: 's', nr: 5, zip: '12345'}, {zip: '999'})")
    q("UPDATE u SET na.zip = '111' WHERE k = 1")
    q("ALTER TYPE addr RENAME zip TO postcode")
    q("ALTER TYPE addr RENAME street TO nr")
    q("SELECT na.zip FROM u WHERE k = 1")
    q("SELECT type_name, field_names, field_types FROM system_schema.types WHERE keyspace_name = 'golden_dm2'")
    q("DROP TYPE addr")
    q("DROP TYPE pt")

    # --- counters -----------------------------------------------------------------------
    q("UPDATE cn SET a = a + 5, b = b - 3 WHERE k = 1")
    q("UPDATE cn SET a = a - 7 WHERE k = 1")
    q("UPDATE cn SET a = a + -1 WHERE k = 1")
    q("UPDATE cn SET a = 1 + a WHERE k = 1")
    q("UPDATE cn SET a = b + 1 WHERE k = 1")
    q("UPDATE cn SET a = 5 WHERE k = 1")
    q("UPDATE cn USING TTL 10 SET a = a + 1 WHERE k = 1")
    q("UPDATE cn USING TIMESTAMP 10 SET a = a + 1 WHERE k = 1")
    q("INSERT INTO cn (k, a) VALUES (1, 1)")
    q("UPDATE cn SET a = a + 1 WHERE k = 1 IF a = 1")
    q("DELETE a FROM cn USING TIMESTAMP 10 WHERE k = 1")
    q("UPDATE cn SET a = a + 9223372036854775807 WHERE k = 4")
    q("UPDATE cn SET a = a + 1 WHERE k = 4")
    p("UPDATE cn SET a = a + ? WHERE k = ?", [10, 5])
    # delete a counter column / row, then increment again
    q("UPDATE cn SET a = a + 3, b = b + 1 WHERE k = 2")
    q("DELETE a FROM cn WHERE k = 2")
    q("SELECT * FROM cn WHERE k = 2")
    q("UPDATE cn SET a = a + 10 WHERE k = 2")
    q("UPDATE cn SET a = a + 3, b = b + 3 WHERE k = 3")
    q("DELETE FROM cn WHERE k = 3")
    q("SELECT * FROM cn WHERE k = 3")
    q("UPDATE cn SET a = a + 10 WHERE k = 3")
    # deleted here, incremented again in group B (after a restart, so from disk)
    q("UPDATE cn SET a = a + 3, b = b + 3 WHERE k = 8")
    q("DELETE FROM cn WHERE k = 8")
    q("UPDATE cn SET a = a + 3 WHERE k = 9")
    q("DELETE a FROM cn WHERE k = 9")
    q("UPDATE cnc SET n = n + 1 WHERE k = 1 AND c IN (1, 2, 3)")
    q("DELETE FROM cnc WHERE k = 1 AND c = 2")
    q("DELETE FROM cnc WHERE k = 1 AND c > 2")
    # counter batches
    q(batch(["UPDATE cn SET a = a + 1 WHERE k = 6", "UPDATE cnc SET n = n + 2 WHERE k = 6 AND c = 1"], kind="COUNTER"))
    q(batch(["UPDATE cn SET a = a + 1 WHERE k = 6"]))
    q(batch(["UPDATE cn SET a = a + 1 WHERE k = 6"], kind="UNLOGGED"))
    q(batch(["UPDATE cn SET a = a + 1 WHERE k = 6", "UPDATE c SET l = l + [1] WHERE k = 6"], kind="COUNTER"))
    q(batch(["UPDATE cn SET a = a + 1 WHERE k = 6", "UPDATE c SET l = l + [1] WHERE k = 6"], kind="UNLOGGED"))
    q(batch(["UPDATE cn SET a = a + 1 WHERE k = 6"], kind="COUNTER", ts=5))
    q(batch(["UPDATE c SET l = l + [1] WHERE k = 6"], kind="COUNTER"))
    c.entries.append(dict(cql=None, batch=[["UPDATE cn SET a = a + ? WHERE k = ?", [100, 7]],
                                           ["UPDATE cn SET b = b - ? WHERE k = ?", [1, 7]]],
                          batch_type="COUNTER"))

    # --- time, duration, vector -----------------------------------------------------------
    q("INSERT INTO tv (k, t, d, v) VALUES (1, '08:12:54.123456789', 1h30m, [1.0, 2.5, -3])")
    q("INSERT INTO tv (k, t, d) VALUES (2, 29574123456789, P1D)")
    q("INSERT INTO tv (k, t, d) VALUES (3, '08:12:54', PT2H)")
    q("INSERT INTO tv (k, t, d) VALUES (4, '08:12:54.1', -1d)")
    q("INSERT INTO tv (k, t, d) VALUES (5, '08:12', P1Y2M)")
    q("INSERT INTO tv (k, d) VALUES (6, P0001-02-03T04:05:06)")
    q("INSERT INTO tv (k, d) VALUES (7, -PT1H30M)")
    q("INSERT INTO tv (k, d) VALUES (8, '1h30m')")
    q("INSERT INTO tv (k, d) VALUES (9, P2W)")
    q("INSERT INTO tv (k, t) VALUES (99, 86400000000000)")
    q("INSERT INTO tv (k, t) VALUES (99, -1)")
    q("INSERT INTO tv (k, t) VALUES (99, '8:12:54')")
    q("INSERT INTO tv (k, v) VALUES (10, [1, 2])")
    q("INSERT INTO tv (k, v) VALUES (10, [1, 2, 3, 4])")
    q("INSERT INTO tv (k, v) VALUES (10, [1, null, 3])")
    q("INSERT INTO tv (k, vi) VALUES (11, [7, -7])")
    q("INSERT INTO tv (k, v) VALUES (11, [1e40, 0, 0])")
    p("INSERT INTO tv (k, t, d, v, vi) VALUES (?, ?, ?, ?, ?)",
      [12, Time("01:02:03.000000004"), Duration(1, 2, 3), [0.5, 0.25, 1.0], [1, 2]])
    # two floats for a vector<float, 3> (the driver would refuse to send it)
    c.entries.append(dict(cql="INSERT INTO tv (k, v) VALUES (?, ?)", raw_values=["0x0000000d", "0x3f80000040000000"]))
    q("UPDATE tv SET v[0] = 1 WHERE k = 1")
    q("UPDATE tv SET v = v + [1.0] WHERE k = 1")
    q("SELECT v[0] FROM tv WHERE k = 1")
    q("SELECT * FROM tv WHERE d > 1h ALLOW FILTERING")
    q("SELECT k FROM tv WHERE d = 1h30m ALLOW FILTERING")
    q("SELECT max(d) FROM tv")
    q("SELECT max(t), min(t) FROM tv")
    q("SELECT similarity_cosine(v, [1, 0, 0]), similarity_dot_product(v, [1, 1, 1]), "
      "similarity_euclidean(v, [1, 2.5, -3]) FROM tv WHERE k = 1")
    q("SELECT similarity_cosine(v, [1, 0]) FROM tv WHERE k = 1")
    q("SELECT t + 1h FROM tv WHERE k = 1")
    q("SELECT k, toJson(d), toJson(v), toJson(t) FROM tv WHERE k IN (1, 6, 7)")

    reads_a = [
        r("SELECT * FROM c"),
        r("SELECT k, writetime(l), writetime(s), writetime(m), maxwritetime(m), writetime(fl), ttl(fl) "
          "FROM c WHERE k IN (1, 2, 3)"),
        r("SELECT m['a'], m['same'], writetime(m['a']), writetime(m['same']), ttl(m['a']), s['set'] "
          "FROM c WHERE k = 3"),
        r("SELECT writetime(m['a'..'b']), writetime(s['a'..'z']) FROM c WHERE k = 2"),
        r("SELECT writetime(m['a']), ttl(m['a']), writetime(m['t']), writetime(fm) FROM c WHERE k = 8"),
        r("SELECT ttl(m['t']), ttl(fm) FROM c WHERE k = 8", mask=["ttl(m['t'])", "ttl(fm)"]),
        r("SELECT writetime(m), ttl(m) FROM c WHERE k = 10", mask=["ttl(m)"]),
        r("SELECT writetime(l), writetime(s), ttl(s) FROM c WHERE k = 6"),
        r("SELECT * FROM st"),
        r("SELECT DISTINCT k, sm, ss FROM st"),
        r("SELECT k, c, sm['b'], writetime(ss) FROM st WHERE k IN (1, 2)"),
        r("SELECT token(k), k, v FROM fpk"),
        r("SELECT * FROM fpk WHERE k = {'b': 2, 'a': 1}"),
        r("SELECT token(k), k, c, v FROM tpk"),
        r("SELECT * FROM tpk WHERE k = (1, 'a') ORDER BY c DESC"),
        r("SELECT token(k), k, v FROM upk"),
        r("SELECT * FROM upk WHERE k = {x: 1, y: null}"),
        r("SELECT c, v FROM fck WHERE k = 1"),
        r("SELECT c, v FROM fck WHERE k = 1 ORDER BY c DESC"),
        r("SELECT c, v FROM fck WHERE k = 1 AND c > [1] AND c <= [1, 2, 3]"),
        r("SELECT c, v FROM fck WHERE k = 1 AND c >= ? AND c < ?", [[1, 1], [2]]),
        r("SELECT c, v FROM fckd WHERE k = 1"),
        r("SELECT c, v FROM fckd WHERE k = 1 AND c > [1] AND c <= [1, 2, 3]"),
        r("SELECT c, v FROM fckd WHERE k = 1 AND c < [1] ORDER BY c ASC"),
        r("SELECT c, v FROM fsc WHERE k = 1"),
        r("SELECT c, v FROM fsc WHERE k = 1 AND c >= {'a', 'b'} ORDER BY c DESC"),
        r("SELECT c, v FROM fmc WHERE k = 1"),
        r("SELECT c, v FROM fmc WHERE k = 1 AND c > {1: 'a'}"),
        r("SELECT c, v FROM tc WHERE k = 1"),
        r("SELECT c, v FROM tc WHERE k = 1 AND c > (1, 'a') AND c <= (2, '') ORDER BY c DESC"),
        r("SELECT c, v FROM uc WHERE k = 1"),
        r("SELECT c, v FROM uc WHERE k = 1 AND c > {x: 1, y: -1}"),
        r("SELECT c.x, c.y FROM uc WHERE k = 1 ORDER BY c ASC"),
        r("SELECT * FROM nest"),
        r("SELECT a['z'], c['p'], d FROM nest WHERE k = 1"),
        r("SELECT * FROM u"),
        r("SELECT na.street, na.nr, na.postcode, fa.postcode FROM u WHERE k IN (1, 5)"),
        r("SELECT writetime(na.nr), writetime(na.street), ttl(na.nr), writetime(fa) FROM u WHERE k = 1"),
        r("SELECT * FROM cn"),
        r("SELECT * FROM cnc"),
        r("SELECT * FROM tv"),
        r("SELECT k, d FROM tv WHERE k = ?", [1]),
    ]
    c.phases("A", ks, reads_a)

    # --- group B: writes over the compacted sstables of group A ------------------------------
    q("UPDATE c USING TIMESTAMP 2500 SET l = l + [7] WHERE k = 1")
    q("DELETE m['c'] FROM c WHERE k = 1")
    q("INSERT INTO c (k, l, s, m) VALUES (2, [5], {'e'}, {'e': 5}) USING TIMESTAMP 3000")
    q("UPDATE c USING TIMESTAMP 2999 SET s = s + {'resurrect'}, m['a'] = 0 WHERE k = 2")
    q("UPDATE c USING TIMESTAMP 1400 SET s = s + {'x1400'} WHERE k = 3")
    q("UPDATE c USING TIMESTAMP 1000 SET m['b'] = 200 WHERE k = 3")
    q("DELETE FROM c WHERE k = 4")
    q("INSERT INTO c (k, s) VALUES (4, {'again'})")
    q("UPDATE c SET s = s + {'back'} WHERE k = 7")
    q("UPDATE c SET l[1] = 60 WHERE k = 20")
    q("DELETE fm FROM c WHERE k = 20")
    q("UPDATE st SET sm['d'] = 4 WHERE k = 1")
    q("DELETE sm FROM st WHERE k = 2")
    q("DELETE FROM st WHERE k = 1 AND c = 1")
    q("UPDATE u USING TIMESTAMP 5000 SET na.nr = 99 WHERE k = 1")
    q("DELETE na.postcode FROM u WHERE k = 5")
    q("UPDATE u SET ma = ma - {'home'} WHERE k = 1")
    q("UPDATE cn SET a = a + 100 WHERE k = 1")
    q("UPDATE cn SET b = b + 1 WHERE k = 2")
    q("DELETE b FROM cn WHERE k = 1")
    q("UPDATE cn SET a = a + 1 WHERE k = 3")
    q("UPDATE cnc SET n = n + 1 WHERE k = 1 AND c = 2")
    q("UPDATE cn SET a = a + 10 WHERE k = 8")
    q("UPDATE cn SET a = a + 10 WHERE k = 9")
    q("UPDATE tv SET d = 2h WHERE k = 1")
    q("DELETE v FROM tv WHERE k = 1")
    q("UPDATE nest SET a['x'] = [8] WHERE k = 1")
    q("DELETE FROM fck WHERE k = 1 AND c = [1, 1]")
    q("DELETE FROM fck WHERE k = 1 AND c > [1, 2] AND c < [2]")
    q("DELETE FROM fckd WHERE k = 1 AND c >= [1] AND c <= [1, 2]")
    q("DELETE FROM tc WHERE k = 1 AND c >= (1, 'a') AND c < (2, '')")
    q("DELETE FROM fsc WHERE k = 1 AND c = {'a'}")
    q("DELETE FROM uc WHERE k = 1 AND c = {x: 1}")
    q("DELETE FROM fpk WHERE k = {'a': 1}")
    c.phases("B", ks, reads_a)

    # --- dropping types ---------------------------------------------------------------------
    q("DROP TYPE addr")
    q("DROP TABLE u")
    q("DROP TYPE addr")
    q("SELECT type_name FROM system_schema.types WHERE keyspace_name = 'golden_dm2'")
    q("DROP KEYSPACE golden_dm2")
