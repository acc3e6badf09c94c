// A small Apache Curator client for wardlock's interop tests.
//
// Usage: LockDriver CONNECT PATH KIND COMMAND [ARGS...]
//   KIND:    rw-write | rw-read (InterProcessReadWriteLock) | mutex (InterProcessMutex)
//   COMMAND: counter N FILE  N times: lock, read the integer in FILE, write it +1, unlock
//            hold            lock, print "holding", wait for a line on stdin, unlock, print "released"
//            try             try without waiting: print "acquired" (then wait for a line,
//                            unlock, print "released") or "busy"
//            downgrade       (rw-write) lock write, lock read, unlock write, print "downgraded",
//                            wait for a line, unlock read, print "released"
//            hold-forever    lock, print "holding", never return (the test kills the process)
//            revocable-hold  (mutex) makeRevocable with a listener, lock, print "holding"; once
//                            revocation is requested print "revoked", unlock, print "released"
//                            (exit 1 if none comes within 60 s)
//            revoke-holder   (mutex) Revoker.attemptRevoke on the first participant node (the
//                            holder), print "revoked", then lock (30 s at most), print
//                            "acquired", unlock, print "released"
//   KIND semaphore (InterProcessSemaphoreV2 at PATH), COMMAND:
//            leases THREADS N PERMITS EVENTS  print "ready"; THREADS threads, each with its own semaphore of
//                            PERMITS leases, N times: acquire a lease (30 s at most), create
//                            PERSISTENT_SEQUENTIAL EVENTS/e- with "+<holder>", hold 50 ms, create
//                            "-<holder>", return the lease; then print "done <THREADS*N>"
//   KIND latch (LeaderLatch at PATH), COMMAND is the participant ID: start the latch, print
//            "leader" / "not-leader" whenever leadership changes (its listener), and answer
//            lines on stdin: "leader?" → "getLeader <getLeader().getId()>", "has?" → "has
//            <hasLeadership()>", "close" → close the latch (silently), print "closed"; at
//            the end of stdin close it (if still open) and exit
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.zookeeper.CreateMode;
import org.apache.curator.retry.RetryNTimes;

public class LockDriver {
    public static void main(String[] args) throws Exception {
        if (args.length < 4) {
            System.err.println("usage: LockDriver CONNECT PATH KIND COMMAND [ARGS...]");
            System.exit(2);
        }
        String connect = args[0], path = args[1], kind = args[2], command = args[3];
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connect)
                .sessionTimeoutMs(2000)
                .connectionTimeoutMs(5000)
                .retryPolicy(new RetryNTimes(5, 200))
                .build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("cannot connect to " + connect);
            System.exit(1);
        }
        if (kind.equals("semaphore") && command.equals("leases")) {
            int threads = Integer.parseInt(args[4]);
            int n = Integer.parseInt(args[5]);
            int permits = Integer.parseInt(args[6]);
            String events = args[7];
            Thread[] running = new Thread[threads];
            boolean[] failed = new boolean[1];
            say("ready");
            for (int t = 0; t < threads; t++) {
                String holder = "java" + t;
                running[t] = new Thread(() -> {
                    try {
                        leases(client, path, permits, n, events, holder);
                    } catch (Exception e) {
                        e.printStackTrace();
                        synchronized (failed) { failed[0] = true; }
                    }
                });
                running[t].start();
            }
            for (Thread thread : running) thread.join();
            if (failed[0]) System.exit(1);
            say("done " + (threads * n));
            client.close();
            return;
        }
        if (kind.equals("latch")) {
            latch(client, path, command);
            client.close();
            return;
        }
        InterProcessReadWriteLock rw = new InterProcessReadWriteLock(client, path);
        InterProcessLock lock;
        switch (kind) {
            case "rw-write": lock = rw.writeLock(); break;
            case "rw-read": lock = rw.readLock(); break;
            case "mutex": lock = new InterProcessMutex(client, path); break;
            default: System.err.println("unknown kind " + kind); System.exit(2); return;
        }
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        switch (command) {
            case "counter": {
                int n = Integer.parseInt(args[4]);
                Path file = Paths.get(args[5]);
                for (int i = 0; i < n; i++) {
                    lock.acquire();
                    try {
                        long value = 0;
                        try {
                            String text = new String(Files.readAllBytes(file), StandardCharsets.UTF_8).trim();
                            if (!text.isEmpty()) value = Long.parseLong(text);
                        } catch (NoSuchFileException e) {
                            value = 0;
                        }
                        Files.write(file, Long.toString(value + 1).getBytes(StandardCharsets.UTF_8));
                    } finally {
                        lock.release();
                    }
                }
                say("done " + n);
                break;
            }
            case "hold":
                lock.acquire();
                say("holding");
                stdin.readLine();
                lock.release();
                say("released");
                break;
            case "try":
                if (lock.acquire(0, TimeUnit.MILLISECONDS)) {
                    say("acquired");
                    stdin.readLine();
                    lock.release();
                    say("released");
                } else {
                    say("busy");
                }
                break;
            case "downgrade":
                rw.writeLock().acquire();
                rw.readLock().acquire();
                rw.writeLock().release();
                say("downgraded");
                stdin.readLine();
                rw.readLock().release();
                say("released");
                break;
            case "revocable-hold": {
                InterProcessMutex mutex = (InterProcessMutex) lock;
                CountDownLatch asked = new CountDownLatch(1);
                // The listener runs on Curator's thread; the mutex must be
                // released by the thread that took it, so it only signals.
                mutex.makeRevocable(revoked -> asked.countDown());
                mutex.acquire();
                say("holding");
                if (!asked.await(60, TimeUnit.SECONDS)) {
                    System.err.println("no revocation request within 60 s");
                    System.exit(1);
                }
                say("revoked");
                mutex.release();
                say("released");
                break;
            }
            case "revoke-holder": {
                Collection<String> nodes = ((InterProcessMutex) lock).getParticipantNodes();
                if (nodes.isEmpty()) {
                    System.err.println("nobody holds " + path);
                    System.exit(1);
                }
                Revoker.attemptRevoke(client, nodes.iterator().next());
                say("revoked");
                if (!lock.acquire(30, TimeUnit.SECONDS)) {
                    System.err.println("the holder did not give " + path + " up within 30 s");
                    System.exit(1);
                }
                say("acquired");
                lock.release();
                say("released");
                break;
            }
            case "hold-forever":
                lock.acquire();
                say("holding");
                Thread.sleep(Long.MAX_VALUE);
                break;
            default:
                System.err.println("unknown command " + command);
                System.exit(2);
        }
        client.close();
    }

    private static void latch(CuratorFramework client, String path, String id) throws Exception {
        LeaderLatch latch = new LeaderLatch(client, path, id);
        latch.addListener(new LeaderLatchListener() {
            @Override
            public void isLeader() { say("leader"); }

            @Override
            public void notLeader() { say("not-leader"); }
        });
        latch.start();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        boolean open = true;
        String line;
        while ((line = stdin.readLine()) != null) {
            switch (line) {
                case "leader?": say("getLeader " + latch.getLeader().getId()); break;
                case "has?": say("has " + latch.hasLeadership()); break;
                case "close":
                    latch.close();
                    open = false;
                    say("closed");
                    break;
                default:
                    System.err.println("unknown latch command " + line);
                    System.exit(2);
            }
        }
        if (open) latch.close();
    }

    private static void leases(CuratorFramework client, String path, int permits, int n,
                               String events, String holder) throws Exception {
        InterProcessSemaphoreV2 semaphore = new InterProcessSemaphoreV2(client, path, permits);
        for (int i = 0; i < n; i++) {
            Lease lease = semaphore.acquire(30, TimeUnit.SECONDS);
            if (lease == null) throw new IllegalStateException(holder + ": no lease within 30 s");
            try {
                event(client, events, "+" + holder);
                Thread.sleep(50);
                event(client, events, "-" + holder);
            } finally {
                semaphore.returnLease(lease);
            }
        }
    }

    private static void event(CuratorFramework client, String events, String what) throws Exception {
        client.create().creatingParentsIfNeeded().withMode(CreateMode.PERSISTENT_SEQUENTIAL)
                .forPath(events + "/e-", what.getBytes(StandardCharsets.UTF_8));
    }

    private static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
