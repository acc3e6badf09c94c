// Apache Curator as a system of wardlock-bench (tests/src/bin/wardlock-bench/systems/curator.rs).
//
// One JVM runs every client of a phase as a thread, each with its own CuratorFramework
// (its own ZooKeeper session: `curator`), or all threads on one shared CuratorFramework
// (one session, as an application uses Curator: `curator-shared`). The clients stay
// connected between phases, so connecting is not measured and the JIT warms up over the
// warm-up phase, as the server does.
//
// Usage: BenchDriver CONNECT SESSION_TIMEOUT_MS, then commands on stdin, one a line:
//   prepare N                      have at least N clients connected; prints "ready"
//   prepare-shared                 have the shared client connected; prints "ready"
//   run CHECK (PATH PLAN)...       one thread per (PATH, PLAN) (the i-th uses client i), all
//                                  at once; PLAN is one letter per op, w (exclusive) or r
//                                  (shared). Every PLAN all w: InterProcessMutex on PATH,
//                                  else InterProcessReadWriteLock on PATH (one lock object
//                                  per thread). CHECK is the counter file of the exclusion
//                                  check, or "-". Prints one JSON line: {"cpu_ns":N,
//                                  "clients":[{"start":unix ns,"end":unix ns,"writes":N,
//                                  "violations":N,"lat":[ns...]}]}
//   run-shared CHECK (PATH PLAN)...  as run, every thread on the shared client
// End of input closes every client and exits.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;

public class BenchDriver {
    static final int WIDTH = 20;

    static final class Result {
        long start, end, writes, violations;
        long[] lat;
        Exception error;
    }

    public static void main(String[] args) throws Exception {
        String connect = args[0];
        int sessionTimeoutMs = Integer.parseInt(args[1]);
        List<CuratorFramework> clients = new ArrayList<>();
        CuratorFramework shared = null;
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = stdin.readLine()) != null) {
            String[] words = line.trim().split(" ");
            switch (words[0]) {
                case "prepare": {
                    int n = Integer.parseInt(words[1]);
                    while (clients.size() < n) {
                        clients.add(connect(connect, sessionTimeoutMs));
                    }
                    System.out.println("ready");
                    System.out.flush();
                    break;
                }
                case "prepare-shared": {
                    if (shared == null) {
                        shared = connect(connect, sessionTimeoutMs);
                    }
                    System.out.println("ready");
                    System.out.flush();
                    break;
                }
                case "run": {
                    System.out.println(run(clients, null, words));
                    System.out.flush();
                    break;
                }
                case "run-shared": {
                    if (shared == null) {
                        throw new IllegalStateException("run-shared before prepare-shared");
                    }
                    System.out.println(run(clients, shared, words));
                    System.out.flush();
                    break;
                }
                default:
                    System.err.println("unknown command " + words[0]);
                    System.exit(2);
            }
        }
        for (CuratorFramework client : clients) {
            client.close();
        }
        if (shared != null) {
            shared.close();
        }
    }

    static CuratorFramework connect(String connect, int sessionTimeoutMs) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.newClient(
                connect, sessionTimeoutMs, 5000, new RetryNTimes(5, 200));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("cannot connect to " + connect);
        }
        return client;
    }

    // Every thread on `common` (the shared client) when it is given, else thread i on clients[i].
    static String run(List<CuratorFramework> clients, CuratorFramework common, String[] words)
            throws Exception {
        String check = words[1];
        int n = (words.length - 2) / 2;
        boolean mutex = true;
        for (int i = 0; i < n; i++) {
            if (words[3 + 2 * i].indexOf('r') >= 0) {
                mutex = false;
            }
        }
        FileChannel counter = check.equals("-") ? null
                : FileChannel.open(Paths.get(check), StandardOpenOption.READ, StandardOpenOption.WRITE);
        Result[] results = new Result[n];
        Thread[] threads = new Thread[n];
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long cpuBefore = os.getProcessCpuTime();
        for (int i = 0; i < n; i++) {
            CuratorFramework client = common != null ? common : clients.get(i);
            String path = words[2 + 2 * i];
            String plan = words[3 + 2 * i];
            Result result = new Result();
            results[i] = result;
            InterProcessLock exclusive;
            InterProcessLock shared;
            if (mutex) {
                exclusive = new InterProcessMutex(client, path);
                shared = null;
            } else {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
                exclusive = rw.writeLock();
                shared = rw.readLock();
            }
            threads[i] = new Thread(() -> {
                try {
                    result.lat = new long[plan.length()];
                    result.start = unixNanos();
                    for (int op = 0; op < plan.length(); op++) {
                        boolean write = plan.charAt(op) == 'w';
                        InterProcessLock lock = write ? exclusive : shared;
                        long t0 = System.nanoTime();
                        lock.acquire();
                        try {
                            if (counter != null) {
                                result.violations += criticalSection(counter, write);
                            }
                        } finally {
                            lock.release();
                        }
                        result.lat[op] = System.nanoTime() - t0;
                        if (write) {
                            result.writes++;
                        }
                    }
                    result.end = unixNanos();
                } catch (Exception e) {
                    result.error = e;
                }
            });
        }
        for (Thread thread : threads) {
            thread.start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        long cpu = os.getProcessCpuTime() - cpuBefore;
        if (counter != null) {
            counter.close();
        }
        StringBuilder out = new StringBuilder("{\"cpu_ns\":").append(cpu).append(",\"clients\":[");
        for (int i = 0; i < n; i++) {
            Result r = results[i];
            if (r.error != null) {
                return "{\"error\":\"client " + i + ": " + r.error.toString().replace('"', '\'') + "\"}";
            }
            if (i > 0) {
                out.append(',');
            }
            out.append("{\"start\":").append(r.start).append(",\"end\":").append(r.end)
                    .append(",\"writes\":").append(r.writes).append(",\"violations\":").append(r.violations)
                    .append(",\"lat\":[");
            for (int op = 0; op < r.lat.length; op++) {
                if (op > 0) {
                    out.append(',');
                }
                out.append(r.lat[op]);
            }
            out.append("]}");
        }
        return out.append("]}").toString();
    }

    static long unixNanos() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000_000L + now.getNano();
    }

    // The protocol of tests/src/bin/wardlock-bench/check.rs: a writer reads v (even),
    // writes v + 1, reads it back, writes v + 2; a reader reads twice (even, unchanged).
    static long criticalSection(FileChannel file, boolean write) throws Exception {
        long violations = 0;
        long first = read(file);
        violations += first < 0 ? 1 : first % 2;
        if (write) {
            write(file, first + 1);
            long back = read(file);
            violations += back != first + 1 ? 1 : 0;
            write(file, first + 2);
        } else {
            long second = read(file);
            violations += second != first ? 1 : 0;
        }
        return violations;
    }

    static long read(FileChannel file) throws Exception {
        ByteBuffer buf = ByteBuffer.allocate(WIDTH);
        while (buf.hasRemaining()) {
            if (file.read(buf, buf.position()) < 0) {
                return -1;
            }
        }
        String text = new String(buf.array(), StandardCharsets.US_ASCII);
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    static void write(FileChannel file, long value) throws Exception {
        ByteBuffer buf = ByteBuffer.wrap(String.format("%020d", value).getBytes(StandardCharsets.US_ASCII));
        while (buf.hasRemaining()) {
            file.write(buf, buf.position());
        }
    }
}
