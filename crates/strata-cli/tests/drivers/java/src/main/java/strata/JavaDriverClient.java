package strata;

import com.datastax.oss.driver.api.core.AllNodesFailedException;
import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import com.datastax.oss.driver.api.core.DefaultProtocolVersion;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.auth.AuthenticationException;
import com.datastax.oss.driver.api.core.connection.ClosedConnectionException;
import com.datastax.oss.driver.api.core.cql.AsyncResultSet;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.metadata.Metadata;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.NodeState;
import com.datastax.oss.driver.api.core.metadata.schema.ClusteringOrder;
import com.datastax.oss.driver.api.core.metadata.schema.ColumnMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.KeyspaceMetadata;
import com.datastax.oss.driver.api.core.metadata.schema.TableMetadata;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import com.datastax.oss.driver.api.core.servererrors.SyntaxError;
import com.datastax.oss.driver.api.core.ssl.ProgrammaticSslEngineFactory;
import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManagerFactory;

/**
 * The Java driver 4.x with default settings against {@code strata serve}, as an application
 * would use it: one session, prepared statements, LWTs, deletes, slices, paging and batches.
 *
 * <p>Usage: {@code JavaDriverClient HOST PORT [--user U --password P] [--ca CA.pem] [--restart]
 * [--expect-failure auth|tls]}. One line per step on stdout; exit 0 when every check held.
 *
 * <ul>
 *   <li>{@code --ca}: TLS, trusting only the CA in that PEM file, with host name validation.
 *   <li>{@code --restart}: after the workload, print {@code ready for restart}, wait for a line
 *       on stdin (sent once the server was restarted on the same port), then check the same
 *       session reconnects, re-runs its prepared statements and reads what was written before.
 *   <li>{@code --expect-failure auth|tls}: connecting must fail, for that reason (auth: an
 *       AuthenticationException; tls: the connection closed by the server, or a failed TLS
 *       handshake); exit 0 if it did, with the driver's messages on stdout.
 * </ul>
 */
public final class JavaDriverClient {
  private static final String DATACENTER = "datacenter1";
  private static final int SERIES_PARTITIONS = 10;
  private static final int SERIES_ROWS = 1000;
  private static final int PAGE_SIZE = 333;

  private JavaDriverClient() {}

  public static void main(String[] args) {
    int code;
    try {
      code = run(Options.parse(args));
    } catch (Throwable t) {
      System.out.println("FAILED: " + t);
      t.printStackTrace(System.out);
      code = 1;
    }
    System.out.flush();
    // The driver's threads are gone once the session is closed; exit anyway, so that a
    // failure with a session still open cannot keep the JVM alive.
    System.exit(code);
  }

  private static final class Options {
    String host;
    int port;
    String user;
    String password;
    Path ca;
    boolean restart;
    String expectFailure;

    static Options parse(String[] args) {
      Options o = new Options();
      List<String> positional = new ArrayList<>();
      for (int i = 0; i < args.length; i++) {
        switch (args[i]) {
          case "--user":
            o.user = value(args, ++i);
            break;
          case "--password":
            o.password = value(args, ++i);
            break;
          case "--ca":
            o.ca = Path.of(value(args, ++i));
            break;
          case "--restart":
            o.restart = true;
            break;
          case "--expect-failure":
            o.expectFailure = value(args, ++i);
            if (!o.expectFailure.equals("auth") && !o.expectFailure.equals("tls")) {
              throw new IllegalArgumentException("--expect-failure takes auth or tls");
            }
            break;
          default:
            if (args[i].startsWith("--")) {
              throw new IllegalArgumentException("unknown option " + args[i]);
            }
            positional.add(args[i]);
        }
      }
      if (positional.size() != 2) {
        throw new IllegalArgumentException(
            "usage: JavaDriverClient HOST PORT [--user U --password P] [--ca CA.pem]"
                + " [--restart] [--expect-failure auth|tls]");
      }
      if ((o.user == null) != (o.password == null)) {
        throw new IllegalArgumentException("--user and --password go together");
      }
      o.host = positional.get(0);
      o.port = Integer.parseInt(positional.get(1));
      return o;
    }

    private static String value(String[] args, int i) {
      if (i >= args.length) {
        throw new IllegalArgumentException(args[i - 1] + " needs a value");
      }
      return args[i];
    }
  }

  private static void step(String line) {
    System.out.println(line);
    System.out.flush();
  }

  private static void check(boolean condition, String what) {
    if (!condition) {
      throw new AssertionError(what);
    }
  }

  private static void checkEq(Object expected, Object actual, String what) {
    if (!Objects.equals(expected, actual)) {
      throw new AssertionError(what + ": expected " + expected + ", got " + actual);
    }
  }

  /** An SSLContext trusting only the certificates in a PEM file. */
  private static SSLContext trusting(Path pem) throws Exception {
    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
    trust.load(null, null);
    int n = 0;
    try (InputStream in = Files.newInputStream(pem)) {
      for (Certificate cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        trust.setCertificateEntry("ca" + n++, cert);
      }
    }
    check(n > 0, "no certificate in " + pem);
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(null, tmf.getTrustManagers(), null);
    return context;
  }

  private static int run(Options o) throws Exception {
    CqlSessionBuilder builder =
        CqlSession.builder()
            .addContactPoint(new InetSocketAddress(o.host, o.port))
            .withLocalDatacenter(DATACENTER);
    if (o.user != null) {
      builder = builder.withAuthCredentials(o.user, o.password);
    }
    if (o.ca != null) {
      builder =
          builder.withSslEngineFactory(
              new ProgrammaticSslEngineFactory(trusting(o.ca), null, true));
    }
    if (o.expectFailure != null) {
      return expectFailure(builder, o.expectFailure);
    }
    try (CqlSession session = builder.build()) {
      workload(session, o.restart);
    }
    step("done");
    return 0;
  }

  /** Every throwable reachable from {@code e}: causes, and each node's errors. */
  private static List<Throwable> allErrors(Throwable e) {
    List<Throwable> out = new ArrayList<>();
    List<Throwable> todo = new ArrayList<>();
    todo.add(e);
    while (!todo.isEmpty()) {
      Throwable t = todo.remove(todo.size() - 1);
      if (t == null || out.contains(t)) {
        continue;
      }
      out.add(t);
      todo.add(t.getCause());
      if (t instanceof AllNodesFailedException) {
        for (List<Throwable> errors : ((AllNodesFailedException) t).getAllErrors().values()) {
          todo.addAll(errors);
        }
      }
    }
    return out;
  }

  private static int expectFailure(CqlSessionBuilder builder, String kind) {
    long start = System.nanoTime();
    try (CqlSession session = builder.build()) {
      step(
          "connected with protocol "
              + session.getContext().getProtocolVersion()
              + ", but a "
              + kind
              + " failure was expected");
      return 1;
    } catch (RuntimeException e) {
      long ms = (System.nanoTime() - start) / 1_000_000;
      List<Throwable> errors = allErrors(e);
      boolean auth = errors.stream().anyMatch(t -> t instanceof AuthenticationException);
      // Plain text to a TLS port: the server closes the connection. TLS to a server whose
      // certificate the client does not trust: the handshake fails.
      boolean tls =
          errors.stream()
              .anyMatch(t -> t instanceof ClosedConnectionException || t instanceof SSLException);
      step("connect failed after " + ms + " ms: " + e.getClass().getName() + ": " + e.getMessage());
      for (Throwable t : errors) {
        step("  caused by " + t.getClass().getName() + ": " + t.getMessage());
      }
      boolean expected = kind.equals("auth") ? auth : tls && !auth;
      if (!(e instanceof AllNodesFailedException) && !(e instanceof AuthenticationException)) {
        expected = false;
      }
      step(expected ? "failed as expected: " + kind : "failed, but not for " + kind);
      return expected ? 0 : 1;
    }
  }

  /** The prepared statements of the workload, re-run after the restart. */
  private static final class Prepared {
    final PreparedStatement insert;
    final PreparedStatement selectOne;
    final PreparedStatement insertIfNotExists;
    final PreparedStatement updateIf;
    final PreparedStatement deleteIfExists;
    final PreparedStatement deleteRange;
    final PreparedStatement deletePartition;
    final PreparedStatement slice;
    final PreparedStatement seriesInsert;
    final PreparedStatement seriesScan;
    final PreparedStatement seriesReverse;
    final PreparedStatement accountInsert;

    Prepared(CqlSession s) {
      insert =
          s.prepare(
              "INSERT INTO jd.events (k, c, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?");
      selectOne = s.prepare("SELECT v, writetime(v), ttl(v) FROM jd.events WHERE k = ? AND c = ?");
      insertIfNotExists =
          s.prepare("INSERT INTO jd.accounts (id, owner, balance) VALUES (?, ?, ?) IF NOT EXISTS");
      updateIf = s.prepare("UPDATE jd.accounts SET balance = ? WHERE id = ? IF balance = ?");
      deleteIfExists = s.prepare("DELETE FROM jd.accounts WHERE id = ? IF EXISTS");
      deleteRange = s.prepare("DELETE FROM jd.events WHERE k = ? AND c >= ? AND c < ?");
      deletePartition = s.prepare("DELETE FROM jd.events WHERE k = ?");
      slice = s.prepare("SELECT c, v FROM jd.events WHERE k = ? AND c >= ? AND c < ?");
      seriesInsert = s.prepare("INSERT INTO jd.series (k, c, v) VALUES (?, ?, ?)");
      seriesScan = s.prepare("SELECT token(k), k, c, v FROM jd.series");
      seriesReverse = s.prepare("SELECT c FROM jd.series WHERE k = ? ORDER BY c DESC");
      accountInsert = s.prepare("INSERT INTO jd.accounts (id, owner, balance) VALUES (?, ?, ?)");
    }
  }

  private static void workload(CqlSession session, boolean restart) throws Exception {
    connected(session);
    schema(session);
    Prepared p = new Prepared(session);
    step("prepared 12 statements");
    writesWithTtlAndTimestamp(session, p);
    lightweightTransactions(session, p);
    deletes(session, p);
    slices(session, p);
    batches(session, p);
    paging(session, p);
    errors(session);
    if (restart) {
      afterRestart(session, p);
    }
  }

  // 1. Connection, protocol version, node and system metadata.
  private static void connected(CqlSession session) {
    ProtocolVersion version = session.getContext().getProtocolVersion();
    step("connected protocol " + version);
    checkEq(DefaultProtocolVersion.V5, version, "negotiated protocol version");
    Row local =
        session
            .execute("SELECT data_center, release_version, cluster_name FROM system.local")
            .one();
    check(local != null, "system.local has a row");
    checkEq(DATACENTER, local.getString("data_center"), "system.local data_center");
    step(
        "system.local: data_center "
            + local.getString("data_center")
            + ", release_version "
            + local.getString("release_version")
            + ", cluster_name "
            + local.getString("cluster_name"));
    Metadata metadata = session.getMetadata();
    Map<java.util.UUID, Node> nodes = metadata.getNodes();
    checkEq(1, nodes.size(), "nodes in metadata");
    Node node = nodes.values().iterator().next();
    checkEq(DATACENTER, node.getDatacenter(), "node datacenter");
    checkEq(NodeState.UP, node.getState(), "node state");
    // The driver's default schema filter leaves out the system keyspaces (refreshed-keyspaces
    // = "!system", "!/^system_.*/", ...), as it does against Cassandra: its metadata has no
    // keyspace yet. The server lists them in system_schema.
    for (String name : metadata.getKeyspaces().keySet().stream().map(CqlIdentifier::asInternal).toList()) {
      check(!name.startsWith("system"), "keyspace " + name + " in the driver's metadata");
    }
    Set<String> keyspaces = new HashSet<>();
    for (Row row : session.execute("SELECT keyspace_name FROM system_schema.keyspaces")) {
      keyspaces.add(row.getString(0));
    }
    check(
        keyspaces.containsAll(List.of("system", "system_schema", "system_auth")),
        "system_schema.keyspaces: " + keyspaces);
    Row localTable =
        session
            .execute(
                "SELECT table_name FROM system_schema.tables"
                    + " WHERE keyspace_name = 'system' AND table_name = 'local'")
            .one();
    check(localTable != null, "system.local in system_schema.tables");
    step(
        "metadata: node "
            + node.getEndPoint()
            + " "
            + node.getState()
            + " in "
            + node.getDatacenter()
            + ", "
            + metadata.getKeyspaces().size()
            + " keyspaces (system ones filtered by default); system_schema lists "
            + new java.util.TreeSet<>(keyspaces));
  }

  private static Map<?, ?> optionMap(TableMetadata table, String name) {
    Object value = table.getOptions().get(CqlIdentifier.fromInternal(name));
    check(value instanceof Map, table.getName() + " option " + name + ": " + value);
    return (Map<?, ?>) value;
  }

  private static String option(TableMetadata table, String name, String key) {
    Object value = optionMap(table, name).get(key);
    return value == null ? null : value.toString();
  }

  private static TableMetadata table(KeyspaceMetadata ks, String name) {
    return ks.getTable(name)
        .orElseThrow(() -> new AssertionError("table " + name + " not in metadata"));
  }

  private static KeyspaceMetadata refreshedKeyspace(CqlSession session) {
    check(session.checkSchemaAgreement(), "schema agreement");
    return session
        .refreshSchema()
        .getKeyspace("jd")
        .orElseThrow(() -> new AssertionError("keyspace jd not in metadata"));
  }

  /** The driver's metadata of the workload's tables, with their options. */
  private static void checkSchemaMetadata(CqlSession session) {
    KeyspaceMetadata ks = refreshedKeyspace(session);
    Map<String, String> replication = ks.getReplication();
    check(
        replication.getOrDefault("class", "").endsWith("SimpleStrategy"),
        "replication " + replication);
    checkEq("1", replication.get("replication_factor"), "replication factor");

    TableMetadata events = table(ks, "events");
    checkEq(
        List.of("k"),
        events.getPartitionKey().stream().map(c -> c.getName().asInternal()).toList(),
        "events partition key");
    List<String> clustering = new ArrayList<>();
    for (Map.Entry<ColumnMetadata, ClusteringOrder> e : events.getClusteringColumns().entrySet()) {
      clustering.add(e.getKey().getName().asInternal() + " " + e.getValue());
    }
    checkEq(List.of("c DESC"), clustering, "events clustering");
    check(
        option(events, "compaction", "class").endsWith("LeveledCompactionStrategy"),
        "events compaction " + optionMap(events, "compaction"));
    checkEq("64", option(events, "compaction", "sstable_size_in_mb"), "sstable_size_in_mb");
    check(
        option(events, "compression", "class").endsWith("ZstdCompressor"),
        "events compression " + optionMap(events, "compression"));
    checkEq("16", option(events, "compression", "chunk_length_in_kb"), "chunk_length_in_kb");

    TableMetadata accounts = table(ks, "accounts");
    check(
        option(accounts, "compaction", "class").endsWith("TimeWindowCompactionStrategy"),
        "accounts compaction " + optionMap(accounts, "compaction"));
    checkEq("HOURS", option(accounts, "compaction", "compaction_window_unit"), "window unit");
    checkEq("6", option(accounts, "compaction", "compaction_window_size"), "window size");
    check(
        option(accounts, "compression", "class").endsWith("LZ4Compressor"),
        "accounts compression " + optionMap(accounts, "compression"));
    checkEq("4", option(accounts, "compression", "chunk_length_in_kb"), "chunk_length_in_kb");

    TableMetadata series = table(ks, "series");
    checkEq(3, series.getColumns().size(), "series columns");

    // The driver renders the schema back as CQL from what it loaded.
    String described = ks.describeWithChildren(true);
    check(
        described.contains("LeveledCompactionStrategy")
            && described.contains("TimeWindowCompactionStrategy")
            && described.contains("CLUSTERING ORDER BY (c DESC)"),
        "describe:\n" + described);
    step(
        "schema metadata: keyspace jd with tables "
            + ks.getTables().keySet()
            + "; events "
            + optionMap(events, "compaction")
            + " "
            + optionMap(events, "compression")
            + "; accounts "
            + optionMap(accounts, "compaction"));
  }

  // 2. DDL with compaction and compression options, seen by the driver's metadata.
  private static void schema(CqlSession session) {
    for (String cql :
        List.of(
            "CREATE KEYSPACE jd WITH replication = "
                + "{'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TABLE jd.events (k int, c int, v text, PRIMARY KEY (k, c))"
                + " WITH CLUSTERING ORDER BY (c DESC)"
                + " AND compaction = {'class': 'LeveledCompactionStrategy',"
                + " 'sstable_size_in_mb': '64'}"
                + " AND compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': '16'}",
            "CREATE TABLE jd.accounts (id text PRIMARY KEY, owner text, balance bigint)"
                + " WITH compaction = {'class': 'TimeWindowCompactionStrategy',"
                + " 'compaction_window_unit': 'HOURS', 'compaction_window_size': '6'}"
                + " AND compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': '4'}",
            "CREATE TABLE jd.series (k int, c int, v bigint, PRIMARY KEY (k, c))")) {
      ResultSet rs = session.execute(cql);
      check(rs.getExecutionInfo().isSchemaInAgreement(), "schema agreement after " + cql);
    }
    step("created keyspace jd and 3 tables");
    checkSchemaMetadata(session);
  }

  /** {@code (v, writetime(v), ttl(v))} of one events row, or null. */
  private static String selectOne(CqlSession session, Prepared p, int k, int c) {
    Row row = session.execute(p.selectOne.bind(k, c)).one();
    if (row == null) {
      return null;
    }
    return row.getString(0)
        + " "
        + row.getLong(1)
        + " "
        + (row.isNull(2) ? "null" : Integer.toString(row.getInt(2)));
  }

  // 3. Prepared writes with USING TTL and USING TIMESTAMP.
  private static void writesWithTtlAndTimestamp(CqlSession session, Prepared p) {
    for (int c = 0; c < 20; c++) {
      session.execute(p.insert.bind(1, c, "v" + c, 0, 1000L));
    }
    // Bound by name as well as by position.
    session.execute(
        p.insert
            .boundStatementBuilder()
            .setInt("k", 2)
            .setInt("c", 0)
            .setString("v", "expiring")
            .setInt("[ttl]", 86_400)
            .setLong("[timestamp]", 2000L)
            .build());
    // An older timestamp loses to the cell already there; a newer one wins.
    session.execute(p.insert.bind(1, 3, "stale", 0, 999L));
    session.execute(p.insert.bind(1, 4, "newer", 0, 1001L));
    checkEq("v3 1000 null", selectOne(session, p, 1, 3), "older write lost");
    checkEq("newer 1001 null", selectOne(session, p, 1, 4), "newer write won");
    Row row = session.execute(p.selectOne.bind(2, 0)).one();
    check(row != null, "the row with a TTL");
    checkEq("expiring", row.getString(0), "value with a TTL");
    checkEq(2000L, row.getLong(1), "writetime with a TTL");
    check(!row.isNull(2), "ttl(v) of a row written with a TTL");
    int ttl = row.getInt(2);
    // The remaining TTL counts down with the clock: at most what was given.
    check(ttl <= 86_400 && ttl >= 86_400 - 3600, "ttl " + ttl + " right after TTL 86400");
    step("writes with TTL and TIMESTAMP: writetime 1000/1001/2000, ttl " + ttl);
  }

  private static Row lwt(ResultSet rs, boolean applied, String what) {
    checkEq(applied, rs.wasApplied(), what + ": wasApplied");
    Row row = rs.one();
    check(row != null, what + ": an LWT answers one row");
    check(rs.one() == null, what + ": an LWT answers one row only");
    checkEq("[applied]", row.getColumnDefinitions().get(0).getName().asInternal(), what);
    checkEq(applied, row.getBoolean("[applied]"), what + ": [applied]");
    return row;
  }

  // 4. Lightweight transactions.
  private static void lightweightTransactions(CqlSession session, Prepared p) {
    Row row = lwt(session.execute(p.insertIfNotExists.bind("a1", "ann", 100L)), true, "IF NOT EXISTS");
    checkEq(1, row.getColumnDefinitions().size(), "columns of an applied INSERT IF NOT EXISTS");

    row = lwt(session.execute(p.insertIfNotExists.bind("a1", "bob", 999L)), false, "IF NOT EXISTS again");
    checkEq("a1", row.getString("id"), "existing id");
    checkEq("ann", row.getString("owner"), "existing owner");
    checkEq(100L, row.getLong("balance"), "existing balance");

    lwt(session.execute(p.updateIf.bind(150L, "a1", 100L)), true, "IF balance = 100");
    row = lwt(session.execute(p.updateIf.bind(175L, "a1", 100L)), false, "IF balance = 100 again");
    checkEq(150L, row.getLong("balance"), "current balance of a failed condition");

    row =
        lwt(
            session.execute("DELETE FROM jd.accounts WHERE id = 'a1' IF owner = 'bob'"),
            false,
            "DELETE IF owner = 'bob'");
    checkEq("ann", row.getString("owner"), "current owner of a failed DELETE IF");

    row =
        lwt(
            session.execute("UPDATE jd.accounts SET balance = 0 WHERE id = 'zz' IF EXISTS"),
            false,
            "UPDATE IF EXISTS of a missing row");
    checkEq(1, row.getColumnDefinitions().size(), "columns of a failed IF EXISTS on no row");

    lwt(session.execute(p.insertIfNotExists.bind("a2", "cat", 5L)), true, "IF NOT EXISTS a2");
    lwt(session.execute(p.deleteIfExists.bind("a2")), true, "DELETE IF EXISTS");
    lwt(session.execute(p.deleteIfExists.bind("a2")), false, "DELETE IF EXISTS again");
    check(
        session.execute("SELECT * FROM jd.accounts WHERE id = 'a2'").one() == null,
        "a2 deleted");
    Row a1 = session.execute("SELECT owner, balance FROM jd.accounts WHERE id = 'a1'").one();
    check(a1 != null, "a1 there");
    checkEq("ann 150", a1.getString(0) + " " + a1.getLong(1), "a1 after the LWTs");
    step("lightweight transactions: applied and not applied, with the current values");
  }

  private static List<String> pairs(ResultSet rs) {
    List<String> out = new ArrayList<>();
    for (Row row : rs) {
      out.add(row.getInt(0) + "=" + row.getString(1));
    }
    return out;
  }

  private static String valueOf(int c) {
    return c == 4 ? "newer" : "v" + c;
  }

  // 5. Deletes: a row, a clustering range (range tombstone), a partition.
  private static void deletes(CqlSession session, Prepared p) {
    session.execute("DELETE FROM jd.events WHERE k = 1 AND c = 5");
    session.execute(p.deleteRange.bind(1, 11, 16));
    session.execute(p.deletePartition.bind(2));
    List<String> expected = new ArrayList<>();
    for (int c = 19; c >= 0; c--) {
      if (c != 5 && (c < 11 || c > 15)) {
        expected.add(c + "=" + valueOf(c));
      }
    }
    checkEq(
        expected,
        pairs(session.execute("SELECT c, v FROM jd.events WHERE k = 1")),
        "partition 1 after the row and range deletes");
    check(
        session.execute("SELECT c, v FROM jd.events WHERE k = 2").one() == null,
        "partition 2 deleted");
    check(selectOne(session, p, 1, 5) == null, "row (1, 5) deleted");
    step("deletes: row, range [11, 16), partition; " + expected.size() + " rows left");
  }

  // 6. Slices in both orders (the table is clustered DESC).
  private static void slices(CqlSession session, Prepared p) {
    List<String> desc = List.of("7=v7", "6=v6", "4=newer", "3=v3", "2=v2");
    checkEq(desc, pairs(session.execute(p.slice.bind(1, 2, 8))), "slice in table order");
    checkEq(
        desc,
        pairs(
            session.execute(
                "SELECT c, v FROM jd.events WHERE k = 1 AND c >= 2 AND c < 8 ORDER BY c DESC")),
        "slice ORDER BY c DESC");
    List<String> asc = new ArrayList<>(desc);
    java.util.Collections.reverse(asc);
    checkEq(
        asc,
        pairs(
            session.execute(
                "SELECT c, v FROM jd.events WHERE k = 1 AND c >= 2 AND c < 8 ORDER BY c ASC")),
        "slice ORDER BY c ASC");
    checkEq(
        List.of("16=v16", "17=v17"),
        pairs(
            session.execute(
                "SELECT c, v FROM jd.events WHERE k = 1 AND c > 15 ORDER BY c ASC LIMIT 2")),
        "slice with LIMIT");
    checkEq(
        List.of("10=v10", "9=v9", "8=v8"),
        pairs(session.execute(p.slice.bind(1, 8, 16))),
        "slice across the range tombstone");
    step("slices: " + desc + " DESC, " + asc + " ASC");
  }

  // 8. Batches of prepared inserts: unlogged (the 10,000 rows of series) and logged.
  private static void batches(CqlSession session, Prepared p) {
    for (int k = 0; k < SERIES_PARTITIONS; k++) {
      for (int chunk = 0; chunk < SERIES_ROWS / 100; chunk++) {
        BatchStatement batch = BatchStatement.newInstance(DefaultBatchType.UNLOGGED);
        for (int c = chunk * 100; c < (chunk + 1) * 100; c++) {
          batch = batch.add(p.seriesInsert.bind(k, c, k * 1000L + c));
        }
        session.execute(batch);
      }
    }
    // A logged batch across partitions and tables, mixing bound and simple statements.
    BatchStatement logged =
        BatchStatement.builder(DefaultBatchType.LOGGED)
            .addStatement(p.insert.bind(3, 0, "logged0", 0, 3000L))
            .addStatement(p.insert.bind(3, 1, "logged1", 0, 3000L))
            .addStatement(p.accountInsert.bind("b1", "dan", 7L))
            .addStatement(
                SimpleStatement.newInstance(
                    "INSERT INTO jd.accounts (id, owner, balance) VALUES (?, ?, ?)",
                    "b2",
                    "eve",
                    8L))
            .build();
    session.execute(logged);
    checkEq("logged0 3000 null", selectOne(session, p, 3, 0), "logged batch row (3, 0)");
    checkEq("logged1 3000 null", selectOne(session, p, 3, 1), "logged batch row (3, 1)");
    List<String> accounts = new ArrayList<>();
    for (Row row :
        session.execute("SELECT id, owner, balance FROM jd.accounts WHERE id IN ('b1', 'b2')")) {
      accounts.add(row.getString(0) + " " + row.getString(1) + " " + row.getLong(2));
    }
    checkEq(List.of("b1 dan 7", "b2 eve 8"), accounts, "logged batch accounts");
    step(
        "batches: "
            + SERIES_PARTITIONS * SERIES_ROWS / 100
            + " unlogged batches of 100 prepared inserts, one logged batch of 4");
  }

  /** Checks the rows of a full scan of series: 10,000, each once, in token then c order. */
  private static void checkSeries(List<long[]> rows, String what) {
    checkEq(SERIES_PARTITIONS * SERIES_ROWS, rows.size(), what + ": rows");
    Set<Long> seen = new HashSet<>();
    for (int i = 0; i < rows.size(); i++) {
      long[] r = rows.get(i);
      long token = r[0];
      long k = r[1];
      long c = r[2];
      checkEq(k * 1000 + c, r[3], what + ": value of (" + k + ", " + c + ")");
      check(seen.add(k * 1000 + c), what + ": (" + k + ", " + c + ") seen twice");
      if (i > 0) {
        long[] prev = rows.get(i - 1);
        if (prev[1] == k) {
          checkEq(prev[2] + 1, c, what + ": clustering order in partition " + k);
        } else {
          check(prev[0] < token, what + ": token order between " + prev[1] + " and " + k);
          checkEq(SERIES_ROWS - 1L, prev[2], what + ": partition " + prev[1] + " cut short");
          checkEq(0L, c, what + ": partition " + k + " starts at 0");
        }
      }
    }
  }

  private static long[] seriesRow(Row row) {
    return new long[] {row.getLong(0), row.getInt(1), row.getInt(2), row.getLong(3)};
  }

  /** Pages of a statement through the async API; every page but the last is full. */
  private static List<long[]> asyncPages(CqlSession session, Statement<?> stmt, int[] pages)
      throws InterruptedException, ExecutionException {
    List<long[]> out = new ArrayList<>();
    AsyncResultSet page = session.executeAsync(stmt).toCompletableFuture().get();
    while (true) {
      pages[0]++;
      int n = page.remaining();
      for (Row row : page.currentPage()) {
        out.add(seriesRow(row));
      }
      if (!page.hasMorePages()) {
        check(n <= PAGE_SIZE, "last page of " + n + " rows");
        return out;
      }
      checkEq(PAGE_SIZE, n, "a page with more to come is full");
      page = page.fetchNextPage().toCompletableFuture().get();
    }
  }

  /** Pages of a bound statement, resumed each time from the paging state. */
  private static List<long[]> pagingState(CqlSession session, BoundStatement first, int[] pages) {
    List<long[]> out = new ArrayList<>();
    ByteBuffer state = null;
    do {
      ResultSet rs = session.execute(first.setPagingState(state));
      pages[0]++;
      int n = rs.getAvailableWithoutFetching();
      for (int i = 0; i < n; i++) {
        out.add(seriesRow(rs.one()));
      }
      state = rs.getExecutionInfo().getPagingState();
      check(state == null ? n <= PAGE_SIZE : n == PAGE_SIZE, "page of " + n + " rows");
    } while (state != null);
    return out;
  }

  // 7. 10,000 rows paged through, simple and prepared, and a partition in reverse.
  private static void paging(CqlSession session, Prepared p) throws Exception {
    int[] simplePages = {0};
    List<long[]> simple =
        asyncPages(
            session,
            SimpleStatement.newInstance("SELECT token(k), k, c, v FROM jd.series")
                .setPageSize(PAGE_SIZE),
            simplePages);
    checkSeries(simple, "simple statement, page size " + PAGE_SIZE);

    int[] preparedPages = {0};
    List<long[]> prepared =
        pagingState(session, p.seriesScan.bind().setPageSize(PAGE_SIZE), preparedPages);
    checkSeries(prepared, "prepared statement, page size " + PAGE_SIZE);
    for (int i = 0; i < simple.size(); i++) {
      check(
          java.util.Arrays.equals(simple.get(i), prepared.get(i)),
          "row " + i + " differs between the simple and the prepared scan");
    }

    // The synchronous iterator fetches the next pages by itself.
    ResultSet reverse = session.execute(p.seriesReverse.bind(3).setPageSize(100));
    int expect = SERIES_ROWS - 1;
    for (Row row : reverse) {
      checkEq(expect, row.getInt(0), "partition 3 in reverse");
      expect--;
    }
    checkEq(-1, expect, "partition 3 in reverse: rows");
    int reversePages = reverse.getExecutionInfos().size();
    check(reversePages >= SERIES_ROWS / 100, "pages of partition 3: " + reversePages);
    step(
        "paging: "
            + simple.size()
            + " rows in "
            + simplePages[0]
            + " pages (simple), "
            + prepared.size()
            + " rows in "
            + preparedPages[0]
            + " pages (prepared, paging state), partition 3 in reverse in "
            + reversePages
            + " pages");
  }

  private static void errors(CqlSession session) {
    try {
      session.execute("SELECT * FROM jd.no_such_table");
      throw new AssertionError("a query of an unknown table succeeded");
    } catch (InvalidQueryException e) {
      step("unknown table: InvalidQueryException: " + e.getMessage());
    }
    try {
      session.execute("SELEKT * FROM jd.events");
      throw new AssertionError("a syntax error succeeded");
    } catch (SyntaxError e) {
      step("syntax error: SyntaxError: " + e.getMessage());
    }
  }

  // The server restarts on the same port and data directory; the session carries on.
  private static void afterRestart(CqlSession session, Prepared p) throws Exception {
    step("ready for restart");
    BufferedReader stdin =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line = stdin.readLine();
    check(line != null, "stdin closed before the restart was signalled");
    long start = System.nanoTime();
    long deadline = start + 120_000_000_000L;
    int attempts = 0;
    while (true) {
      attempts++;
      try {
        session.execute("SELECT release_version FROM system.local");
        break;
      } catch (DriverException e) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError("the session did not reconnect within 120 s", e);
        }
        Thread.sleep(200);
      }
    }
    step(
        "reconnected after "
            + attempts
            + " attempts, "
            + (System.nanoTime() - start) / 1_000_000
            + " ms");
    // The control connection (schema metadata, events) reconnects on its own schedule
    // (exponential, from 1 s): until it is back, checkSchemaAgreement() answers false.
    while (!session.checkSchemaAgreement()) {
      check(System.nanoTime() < deadline, "the control connection did not come back in 120 s");
      Thread.sleep(200);
    }
    step("control connection back after " + (System.nanoTime() - start) / 1_000_000 + " ms");

    // Every prepared statement again: the new server has none, so the driver prepares them
    // again (when the node comes back up, or on the Unprepared answer to EXECUTE).
    checkEq("newer 1001 null", selectOne(session, p, 1, 4), "a write from before the restart");
    session.execute(p.insert.bind(1, 30, "back", 0, 5000L));
    checkEq("back 5000 null", selectOne(session, p, 1, 30), "a write after the restart");
    lwt(session.execute(p.updateIf.bind(200L, "a1", 150L)), true, "LWT after the restart");
    Row row =
        lwt(
            session.execute(p.insertIfNotExists.bind("a1", "cat", 1L)),
            false,
            "IF NOT EXISTS after the restart");
    checkEq(200L, row.getLong("balance"), "balance after the restart");
    List<String> expected = List.of("7=v7", "6=v6", "4=newer", "3=v3", "2=v2");
    checkEq(expected, pairs(session.execute(p.slice.bind(1, 2, 8))), "slice after the restart");
    session.execute(
        BatchStatement.newInstance(
            DefaultBatchType.LOGGED,
            p.seriesInsert.bind(3, 0, 3000L),
            p.seriesInsert.bind(3, 1, 3001L)));
    session.execute(p.deleteRange.bind(1, 0, 2));
    checkEq(null, selectOne(session, p, 1, 1), "range deleted after the restart");
    checkSchemaMetadata(session);
    paging(session, p);
    PreparedStatement fresh = session.prepare("SELECT count(*) FROM jd.series WHERE k = ?");
    checkEq(
        (long) SERIES_ROWS,
        session.execute(fresh.bind(3)).one().getLong(0),
        "count(*) prepared after the restart");
    step("after restart: prepared statements, LWTs, batch, metadata and paging all work");
  }
}
