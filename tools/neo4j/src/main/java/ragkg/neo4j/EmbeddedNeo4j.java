package ragkg.neo4j;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.config.Setting;
import org.neo4j.logging.log4j.Log4jLogProvider;

import sun.misc.Signal;

/**
 * Runs Neo4j Community (5.26 LTS) embedded, with only the Bolt connector enabled, so that the
 * official drivers can connect to it over {@code bolt://} exactly like to a Neo4j server.
 *
 * <p>Build (from the repository root):
 *
 * <pre>
 *   mvn -q -f tools/neo4j/pom.xml -DskipTests package
 * </pre>
 *
 * <p>Run:
 *
 * <pre>
 *   NEO4J_PASSWORD=... java -Xmx768m \
 *     --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED \
 *     --add-opens=java.base/sun.nio.ch=ALL-UNNAMED \
 *     -cp 'tools/neo4j/target/classes:tools/neo4j/target/lib/*' \
 *     ragkg.neo4j.EmbeddedNeo4j --home DIR --port 7687 [--page-cache 64m] [--database neo4j]
 * </pre>
 *
 * <p>or {@code java -Xmx768m -jar tools/neo4j/target/ragkg-embedded-neo4j.jar --home ...}, whose
 * manifest carries the class path ({@code lib/}) and the {@code Add-Opens} entries.
 *
 * <ul>
 *   <li>{@code --home DIR}: the DBMS home (created if missing); data under {@code DIR/data},
 *       Neo4j's logs under {@code DIR/logs} ({@code debug.log}, {@code neo4j.log}).
 *   <li>{@code --port N}: the Bolt port, bound to 127.0.0.1 only. No HTTP/HTTPS connector.
 *   <li>{@code --page-cache SIZE}: page cache size, e.g. {@code 64m} (default) or {@code 256m}.
 *   <li>{@code --database NAME}: the user database a new home is created with ({@code neo4j} by default).
 * </ul>
 *
 * <p>Authentication is enabled; the single user is {@code neo4j}, whose password is taken from the
 * environment variable {@code NEO4J_PASSWORD} (at least 8 characters) and (re)set through the
 * system database on every start, so changing the variable changes the password.
 *
 * <p>Once the default database {@code neo4j} is available and the Bolt port accepts connections,
 * exactly one line {@code READY bolt://127.0.0.1:PORT} is printed to stdout. Everything else this
 * class says goes to stderr. SIGTERM or SIGINT shut the DBMS down cleanly and the JVM exits with
 * status 0. Exit status 2: bad arguments or password; 1: startup failed.
 */
public final class EmbeddedNeo4j {

    private static final String USER = "neo4j";
    private static final String PASSWORD_ENV = "NEO4J_PASSWORD";
    private static final int MIN_PASSWORD_LENGTH = 8;
    private static final String DEFAULT_PAGE_CACHE = "64m";
    private static final long DB_AVAILABLE_TIMEOUT_MS = TimeUnit.MINUTES.toMillis(5);
    private static final long BOLT_WAIT_TIMEOUT_MS = TimeUnit.SECONDS.toMillis(60);

    private static final Object LOCK = new Object();
    private static DatabaseManagementService dbms;
    private static Log4jLogProvider userLogProvider;
    private static OutputStream userLogStream;
    private static boolean shutDown;

    private EmbeddedNeo4j() {}

    public static void main(String[] args) {
        // Keep stdout for the READY line only: anything that writes to System.out from here on
        // (a library, a stray print) ends up on stderr instead.
        PrintStream stdout = System.out;
        System.setOut(System.err);

        Options opts;
        try {
            opts = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("embedded-neo4j: " + e.getMessage());
            System.err.println(Options.USAGE);
            System.exit(2);
            return;
        }

        String password = System.getenv(PASSWORD_ENV);
        if (password == null || password.isEmpty()) {
            System.err.println("embedded-neo4j: environment variable " + PASSWORD_ENV
                    + " is not set; it must hold the password of user '" + USER + "'");
            System.exit(2);
            return;
        }
        if (password.length() < MIN_PASSWORD_LENGTH) {
            System.err.println("embedded-neo4j: the password in " + PASSWORD_ENV + " is too short ("
                    + password.length() + " characters); Neo4j requires at least "
                    + MIN_PASSWORD_LENGTH);
            System.exit(2);
            return;
        }

        warnIfNotOpened();

        CountDownLatch stop = new CountDownLatch(1);
        // SIGTERM/SIGINT: let the main thread shut down cleanly and exit 0 (a plain shutdown hook
        // would leave the JVM exiting with 143/130).
        for (String sig : new String[] {"TERM", "INT"}) {
            try {
                Signal.handle(new Signal(sig), s -> stop.countDown());
            } catch (IllegalArgumentException e) {
                System.err.println("embedded-neo4j: cannot handle SIG" + sig + ": " + e.getMessage());
            }
        }
        // Any other way the JVM goes down (SIGHUP, System.exit elsewhere): still shut down cleanly.
        Runtime.getRuntime().addShutdownHook(new Thread(EmbeddedNeo4j::shutdown, "neo4j-shutdown"));

        try {
            start(opts, password);
        } catch (Throwable t) {
            System.err.println("embedded-neo4j: startup failed: " + describe(t));
            t.printStackTrace(System.err);
            shutdown();
            System.exit(1);
            return;
        }

        if (stop.getCount() == 0) { // asked to stop while starting
            shutdown();
            System.exit(0);
            return;
        }
        stdout.println("READY bolt://127.0.0.1:" + opts.port);
        stdout.flush();

        try {
            stop.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        System.err.println("embedded-neo4j: stopping");
        long t0 = System.nanoTime();
        shutdown();
        System.err.printf(Locale.ROOT, "embedded-neo4j: stopped in %d ms%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
        System.exit(0);
    }

    private static void start(Options opts, String password) throws Exception {
        Path home = opts.home.toAbsolutePath().normalize();
        Files.createDirectories(home);
        Path logs = home.resolve("logs");
        Files.createDirectories(logs);

        checkPortFree(opts.port);

        Map<Setting<?>, Object> config = new HashMap<>();
        config.put(GraphDatabaseSettings.auth_enabled, true);
        config.put(GraphDatabaseSettings.pagecache_memory, opts.pageCacheBytes);
        config.put(GraphDatabaseSettings.logs_directory, logs);
        config.put(GraphDatabaseSettings.udc_enabled, false);
        // The user database a new home starts with (the one NEO4J_DATABASE names); an existing home
        // keeps the one it was created with, and a name it lacks stops the start below.
        config.put(GraphDatabaseSettings.initial_default_database, opts.database);
        config.put(BoltConnector.enabled, true);
        config.put(BoltConnector.listen_address, new SocketAddress("127.0.0.1", opts.port));
        config.put(BoltConnector.advertised_address, new SocketAddress("127.0.0.1", opts.port));
        config.put(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED);
        config.put(HttpConnector.enabled, false);
        config.put(HttpsConnector.enabled, false);
        // Bolt's netty event loops otherwise wait a 5 s quiet period each on shutdown (~10 s).
        config.put(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0);

        // The user log (neo4j.log of a server) goes to a file under the home, not to stdout.
        userLogStream = new FileOutputStream(logs.resolve("neo4j.log").toFile(), true);
        userLogProvider = new Log4jLogProvider(userLogStream);

        long t0 = System.nanoTime();
        synchronized (LOCK) {
            dbms = new DatabaseManagementServiceBuilder(home)
                    .setConfig(config)
                    .setUserLogProvider(userLogProvider)
                    .build();
        }

        GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
        if (!system.isAvailable(DB_AVAILABLE_TIMEOUT_MS)) {
            throw new IllegalStateException("the system database did not become available");
        }
        setPassword(system, password);

        GraphDatabaseService db;
        try {
            db = dbms.database(opts.database);
        } catch (org.neo4j.dbms.api.DatabaseNotFoundException e) {
            throw new IllegalStateException("the database '" + opts.database + "' does not exist in " + home
                    + " (a home keeps the database it was created with)");
        }
        if (!db.isAvailable(DB_AVAILABLE_TIMEOUT_MS)) {
            throw new IllegalStateException("the database '" + opts.database + "' did not become available");
        }
        waitForBolt(opts.port);
        System.err.printf(Locale.ROOT, "embedded-neo4j: started in %d ms (home %s, logs in %s)%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0), home, logs);
    }

    /**
     * Sets the password of user neo4j, idempotently, and clears "change required" (set on the
     * user created at first start). The password is passed as a query parameter, never printed.
     */
    private static void setPassword(GraphDatabaseService system, String password) {
        try {
            system.executeTransactionally(
                    "ALTER USER " + USER + " SET PASSWORD $password CHANGE NOT REQUIRED",
                    Map.of("password", password));
        } catch (RuntimeException e) {
            // Neo4j refuses to "change" a password to the one it already has; that is fine, but
            // the change-required flag must still be cleared.
            if (!String.valueOf(messageChain(e)).toLowerCase(Locale.ROOT)
                    .contains("old password and new password cannot be the same")) {
                throw new IllegalStateException(
                        "could not set the password of user '" + USER + "' (" + e.getClass().getName()
                                + ")", e);
            }
            system.executeTransactionally("ALTER USER " + USER + " SET PASSWORD CHANGE NOT REQUIRED");
        }
    }

    /**
     * Neo4j works without these, but falls back to slower paths and fills debug.log with
     * warnings (page cache buffers, fadvise/preallocation of transaction logs).
     */
    private static void warnIfNotOpened() {
        Module me = EmbeddedNeo4j.class.getModule();
        Module base = Object.class.getModule();
        StringBuilder missing = new StringBuilder();
        for (String pkg : new String[] {"java.nio", "java.io", "sun.nio.ch"}) {
            if (!base.isOpen(pkg, me)) {
                missing.append(" --add-opens=java.base/").append(pkg).append("=ALL-UNNAMED");
            }
        }
        if (missing.length() > 0) {
            System.err.println("embedded-neo4j: warning: for full performance start the JVM with"
                    + missing);
        }
    }

    /** Fails fast (Neo4j itself only notices after starting its databases, ~10 s). */
    private static void checkPortFree(int port) {
        try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
            s.setReuseAddress(true);
        } catch (IOException e) {
            throw new IllegalStateException("cannot listen on 127.0.0.1:" + port + " (" + e.getMessage()
                    + "); is another Neo4j already running there?", e);
        }
    }

    private static void waitForBolt(int port) throws InterruptedException {
        long deadline = System.currentTimeMillis() + BOLT_WAIT_TIMEOUT_MS;
        IOException last = null;
        while (System.currentTimeMillis() < deadline) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
                return;
            } catch (IOException e) {
                last = e;
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException("the Bolt port " + port + " does not accept connections"
                + (last == null ? "" : ": " + last));
    }

    private static void shutdown() {
        synchronized (LOCK) {
            if (shutDown) {
                return;
            }
            shutDown = true;
            try {
                if (dbms != null) {
                    dbms.shutdown();
                }
            } catch (Throwable t) {
                System.err.println("embedded-neo4j: error during shutdown: " + describe(t));
            } finally {
                try {
                    if (userLogProvider != null) {
                        userLogProvider.close();
                    }
                    if (userLogStream != null) {
                        userLogStream.close();
                    }
                } catch (Throwable ignored) {
                    // nothing left to do
                }
            }
        }
    }

    private static String messageChain(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c.getMessage()).append(" | ");
            if (c.getCause() == c) {
                break;
            }
        }
        return sb.toString();
    }

    private static String describe(Throwable t) {
        return t.getClass().getName() + ": " + messageChain(t);
    }

    private static final class Options {
        static final String USAGE = "usage: EmbeddedNeo4j --home DIR --port N [--page-cache SIZE] [--database NAME]"
                + "  (password in env " + PASSWORD_ENV + ")";

        Path home;
        int port = -1;
        long pageCacheBytes = parseSize(DEFAULT_PAGE_CACHE);
        String database = GraphDatabaseSettings.DEFAULT_DATABASE_NAME;

        static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                String value;
                String name;
                int eq = a.indexOf('=');
                if (a.startsWith("--") && eq > 0) {
                    name = a.substring(0, eq);
                    value = a.substring(eq + 1);
                } else {
                    name = a;
                    if (i + 1 >= args.length) {
                        throw new IllegalArgumentException("missing value for " + a);
                    }
                    value = args[++i];
                }
                switch (name) {
                    case "--home":
                        o.home = Path.of(value);
                        break;
                    case "--port":
                        try {
                            o.port = Integer.parseInt(value);
                        } catch (NumberFormatException e) {
                            throw new IllegalArgumentException("bad port: " + value);
                        }
                        if (o.port < 1 || o.port > 65535) {
                            throw new IllegalArgumentException("bad port: " + value);
                        }
                        break;
                    case "--page-cache":
                        o.pageCacheBytes = parseSize(value);
                        break;
                    case "--database":
                        if (!value.matches("[a-z][a-z0-9.-]{2,62}")) {
                            throw new IllegalArgumentException("bad database name: " + value);
                        }
                        o.database = value;
                        break;
                    default:
                        throw new IllegalArgumentException("unknown argument: " + a);
                }
            }
            if (o.home == null) {
                throw new IllegalArgumentException("--home is required");
            }
            if (o.port < 0) {
                throw new IllegalArgumentException("--port is required");
            }
            return o;
        }

        /** "64m", "1g", "512k", "1048576" to bytes. */
        static long parseSize(String s) {
            String v = s.trim().toLowerCase(Locale.ROOT);
            if (v.endsWith("b")) {
                v = v.substring(0, v.length() - 1);
            }
            long mult = 1;
            if (!v.isEmpty()) {
                char unit = v.charAt(v.length() - 1);
                switch (unit) {
                    case 'k': mult = 1L << 10; break;
                    case 'm': mult = 1L << 20; break;
                    case 'g': mult = 1L << 30; break;
                    default: mult = 1;
                }
                if (mult != 1) {
                    v = v.substring(0, v.length() - 1);
                }
            }
            try {
                long n = Long.parseLong(v.trim());
                if (n <= 0) {
                    throw new NumberFormatException();
                }
                return n * mult;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("bad size: " + s + " (use e.g. 64m, 1g)");
            }
        }
    }
}
