import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * Connects through the capture proxy with default settings, as an application would, except
 * the request timeout (2 s by default; schema changes take longer on a loaded 2-core machine).
 */
public class Capture {
  public static void main(String[] args) {
    try (CqlSession session = CqlSession.builder()
        .addContactPoint(new InetSocketAddress("127.0.0.1", 9043))
        .withLocalDatacenter("datacenter1")
        .withConfigLoader(DriverConfigLoader.programmaticBuilder()
            .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(30))
            .build())
        .build()) {
      System.out.println("protocol " + session.getContext().getProtocolVersion());
      session.execute("CREATE KEYSPACE capture WITH replication = "
          + "{'class': 'SimpleStrategy', 'replication_factor': 1}");
      session.execute("CREATE TABLE capture.t (k int PRIMARY KEY, v text)");
      System.out.println(session.execute("SELECT release_version FROM system.local").one().getString(0));
    }
  }
}
