//! Embedding wardlock in a platform's own world (`acme:platform/plugin`,
//! the `acme-plugin` guest): a synchronous host on six threads with no tokio,
//! its wait limit and interrupt, tenants kept apart, the async host dropping a
//! Store mid-wait, and the two shipped examples (`host/cli/examples/embed.rs`,
//! `embed_sync.rs`) on memory and on a real ZooKeeper.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::capability::sync::block_on;
use wardlock_host::{LockPolicy, MemoryBackend, Mode};
use wardlock_tests::embedding::{
    AsyncPlatform, Held, Reply, SyncPlatform, assert_one_at_a_time, run_sync_command,
};
use wardlock_tests::probe::ZkProbe;
use wardlock_tests::serve::host_target;
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::{Guest, hold, wait_counts};

/// The plugin's reply, or the test fails naming the trap.
fn replied(outcome: wasmtime::Result<Reply>) -> Reply {
    outcome.unwrap_or_else(|trap| panic!("the plugin trapped: {trap:?}"))
}

/// The synchronous host on six threads: two on one lock never hold
/// it at once; a plugin trapping while holding frees the lock for a waiting
/// thread within 200 ms; a 300 ms wait on a lock held elsewhere ends with
/// `timeout` after 300 ms (±150); nothing is left at the end.
#[test]
fn a_sync_host_on_six_threads_keeps_every_rule() {
    let backend = MemoryBackend::new();
    let platform = SyncPlatform::new(Arc::new(backend.clone()));
    let platform = &platform;
    std::thread::scope(|threads| {
        let contenders: Vec<_> = (0..2)
            .map(|_| {
                threads.spawn(move || {
                    (0..8)
                        .map(|_| Held::parse(&replied(platform.handle("hold acme/x 20")).unwrap()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();

        let trapper = threads.spawn(move || {
            let mut store = platform.store(&Arc::new(LockPolicy::new()), "trapper");
            let outcome = platform.call(&mut store, "trap acme/t 400");
            // Before the Store (which frees the lock) drops.
            let trapped_at = Instant::now();
            drop(store);
            (outcome.is_err(), trapped_at)
        });
        block_on(wait_counts(&backend, "acme/t", 1, 0));
        let waiter = threads.spawn(move || {
            let reply = replied(platform.handle("wait acme/t"));
            (reply, Instant::now())
        });
        block_on(wait_counts(&backend, "acme/t", 1, 1));

        let holder = threads.spawn(move || replied(platform.handle("hold acme/h 1500")));
        block_on(wait_counts(&backend, "acme/h", 1, 0));
        let timed = threads.spawn(move || {
            let asked = Instant::now();
            let reply = replied(platform.handle("wait acme/h 300"));
            (reply, asked.elapsed())
        });

        let held: Vec<Held> = contenders
            .into_iter()
            .flat_map(|thread| thread.join().expect("contender thread"))
            .collect();
        assert_eq!(held.len(), 16);
        assert_one_at_a_time(held);

        let (trapped, trapped_at) = trapper.join().expect("trapper thread");
        assert!(trapped, "`trap` must trap");
        let (reply, granted_at) = waiter.join().expect("waiter thread");
        assert!(reply.is_ok_and(|r| r.starts_with("token=")));
        let after_trap = granted_at.saturating_duration_since(trapped_at);
        assert!(
            granted_at >= trapped_at && after_trap < Duration::from_millis(200),
            "the waiter got the lock {after_trap:?} after the holder trapped"
        );

        let (reply, waited) = timed.join().expect("timed thread");
        assert_eq!(reply, Err("Timeout".to_owned()));
        assert!(
            (Duration::from_millis(150)..=Duration::from_millis(450)).contains(&waited),
            "a 300 ms wait took {waited:?}"
        );
        assert!(holder.join().expect("holder thread").is_ok());
    });
    assert_eq!(
        backend.active_names(),
        0,
        "{:?}",
        backend.snapshot(&wardlock_tests::name("acme/h"))
    );
}

/// A wait blocked in a synchronous host ends when another thread interrupts
/// it (with `timeout`, promptly) and leaves nothing queued, while its Store
/// is still alive; later waits are refused until the interrupt is cleared;
/// the per-Store wait limit bounds a wait without timeout.
#[test]
fn a_sync_wait_ends_on_interrupt_or_at_the_wait_limit_leaving_nothing_queued() {
    let backend = MemoryBackend::new();
    let platform = SyncPlatform::new(Arc::new(backend.clone()));
    let platform = &platform;
    let policy = Arc::new(LockPolicy::new());
    std::thread::scope(|threads| {
        let holder = threads.spawn(move || replied(platform.handle("hold acme/i 3000")));
        block_on(wait_counts(&backend, "acme/i", 1, 0));

        let mut store = platform.store(&policy, "interrupted");
        let interrupt = store.data().locks.interrupt_handle();
        let waiter = threads.spawn(move || {
            let reply = replied(platform.call(&mut store, "wait acme/i"));
            (reply, store, Instant::now())
        });
        block_on(wait_counts(&backend, "acme/i", 1, 1));
        let interrupted_at = Instant::now();
        interrupt.interrupt();
        let (reply, mut store, returned_at) = waiter.join().expect("waiter thread");
        assert_eq!(reply, Err("Timeout".to_owned()));
        let took = returned_at.saturating_duration_since(interrupted_at);
        // Uninterrupted, the wait would end when the holder lets go, about 3 s
        // after it took the lock; half of that tells the two apart on a
        // loaded machine (a CI run saw a process get a third of a core).
        assert!(
            took < Duration::from_millis(1500),
            "interrupted wait took {took:?} to return: it waited for the holder"
        );
        // The Store is alive: the wait itself was withdrawn.
        block_on(wait_counts(&backend, "acme/i", 1, 0));
        assert_eq!(
            replied(platform.call(&mut store, "wait acme/i 5000")),
            Err("Timeout".to_owned()),
            "an interrupted instance must not wait again"
        );
        interrupt.clear();

        store
            .data_mut()
            .locks
            .set_wait_limit(Some(Duration::from_millis(200)));
        let asked = Instant::now();
        assert_eq!(
            replied(platform.call(&mut store, "wait acme/i")),
            Err("Timeout".to_owned())
        );
        let waited = asked.elapsed();
        assert!(
            (Duration::from_millis(150)..Duration::from_millis(1500)).contains(&waited),
            "a wait limited to 200 ms took {waited:?}"
        );
        block_on(wait_counts(&backend, "acme/i", 1, 0));
        drop(store);
        assert!(holder.join().expect("holder thread").is_ok());
    });
    assert_eq!(backend.active_names(), 0);
}

/// A 0.2.0 guest (a WASI command) in a synchronous host: `acquire-async`
/// queues, and the pending lock's pollable, waited on with `wasi:io/poll`
/// beside a timer, wakes when another thread releases the lock.
#[test]
fn a_sync_host_serves_0_2_0_guests_and_wakes_their_pollables() {
    let backend = MemoryBackend::new();
    let (holder, grant) = block_on(hold(&backend, "acme/c", Mode::Exclusive));
    let printed = std::thread::scope(|threads| {
        let guest = threads.spawn(|| {
            let commands = [
                "acquire x - acme/a",
                "async x - acme/c",
                "race p1 20000",
                "get p1",
                "status 2",
            ];
            run_sync_command(Guest::Lockctl2, &backend, &commands)
        });
        block_on(wait_counts(&backend, "acme/c", 1, 1));
        holder.release(grant.id).expect("release");
        guest.join().expect("guest thread")
    });
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 5, "{printed}");
    assert!(lines[0].starts_with("h1 token="), "{printed}");
    assert_eq!(lines[1..3], ["p1", "pending"], "{printed}");
    assert!(lines[3].starts_with("h2 token="), "{printed}");
    assert_eq!(lines[4], "held", "{printed}");
    assert_eq!(backend.active_names(), 0);
}

/// Two plugins with different grants in one host cannot touch each other's
/// names; a per-plugin handle cap is answered with `limit-exceeded`.
#[test]
fn tenants_keep_to_their_grants_and_limits() {
    let backend = MemoryBackend::new();
    let platform = SyncPlatform::new(Arc::new(backend.clone()));
    let tenant = |prefix: &str, max_handles: usize| {
        let policy = LockPolicy::new().grant(prefix).expect("prefix");
        Arc::new(policy.with_max_handles(max_handles))
    };
    let (alpha, beta) = (tenant("alpha", 2), tenant("beta", 8));
    let call = |policy: &Arc<LockPolicy>, event: &str| {
        let mut store = platform.store(policy, event);
        replied(platform.call(&mut store, event))
    };
    assert!(call(&alpha, "wait alpha/x 100").is_ok_and(|r| r.starts_with("token=")));
    for (policy, foreign) in [(&alpha, "wait beta/x 100"), (&beta, "wait alpha/x 100")] {
        let reply = call(policy, foreign);
        assert!(
            reply.as_ref().is_err_and(|e| e.starts_with("Denied(")),
            "{foreign}: {reply:?}"
        );
    }
    assert_eq!(call(&alpha, "hoard alpha/h 2"), Ok("held 2".to_owned()));
    let over = call(&alpha, "hoard alpha/h 3");
    assert!(
        over.as_ref()
            .is_err_and(|e| e.starts_with("LimitExceeded(")),
        "{over:?}"
    );
    assert_eq!(call(&beta, "hoard beta/h 3"), Ok("held 3".to_owned()));
    assert_eq!(backend.active_names(), 0);
}

/// The async host: dropping a Store mid-wait (the future that runs the
/// plugin) withdraws the wait at once; a trap frees what the plugin held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_host_frees_everything_when_a_store_drops_mid_wait() {
    let backend = MemoryBackend::new();
    let platform = Arc::new(AsyncPlatform::new(Arc::new(backend.clone())));
    let holding = {
        let platform = platform.clone();
        tokio::spawn(async move { platform.handle("hold acme/d 2000").await })
    };
    wait_counts(&backend, "acme/d", 1, 0).await;
    let waiting = {
        let platform = platform.clone();
        tokio::spawn(async move { platform.handle("wait acme/d").await })
    };
    wait_counts(&backend, "acme/d", 1, 1).await;
    waiting.abort();
    wait_counts(&backend, "acme/d", 1, 0).await;
    holding.abort();
    wait_counts(&backend, "acme/d", 0, 0).await;

    assert!(platform.handle("trap acme/d").await.is_err());
    let reply = platform.handle("wait acme/d 1000").await.expect("no trap");
    assert!(reply.is_ok_and(|r| r.starts_with("token=")));
    assert_eq!(backend.active_names(), 0);
}

/// Runs a shipped example (`embed` or `embed_sync`) with `args`; its stdout
/// lines (`EVENT: REPLY`).
fn run_example(example: &str, args: &[&str]) -> Vec<String> {
    let binary = host_target(&["--example", example], &format!("examples/{example}"));
    let output = std::process::Command::new(binary)
        .args(args)
        .output()
        .expect("run the example");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{example} {args:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout.lines().map(str::to_owned).collect()
}

/// The reply printed for `event`.
fn reply_to<'a>(lines: &'a [String], event: &str) -> Vec<&'a str> {
    let prefix = format!("{event}: ");
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix))
        .collect()
}

/// Both examples run the project's plugin: a grant, a trap that frees its
/// lock for the next event, a name outside the platform's grant refused;
/// two plugins at once on one lock one after the other; a wait ended by the
/// wait limit (async) or the interrupt (sync).
#[test]
fn both_examples_run_the_plugin() {
    let plugin = Guest::AcmePlugin.path();
    for example in ["embed", "embed_sync"] {
        let lines = run_example(
            example,
            &[
                plugin,
                "hold acme/a 20",
                "trap acme/b",
                "wait acme/b 300",
                "wait other/x",
            ],
        );
        assert_eq!(lines[0], "engine: memory");
        expect_replies(
            &lines,
            &[
                ("hold acme/a 20", "token="),
                ("trap acme/b", "plugin trapped"),
                ("wait acme/b 300", "token="),
                ("wait other/x", "Denied("),
            ],
        );

        let lines = run_example(
            example,
            &["--concurrent", plugin, "hold acme/a 200", "hold acme/a 200"],
        );
        let held: Vec<Held> = reply_to(&lines, "hold acme/a 200")
            .into_iter()
            .map(Held::parse)
            .collect();
        assert_eq!(held.len(), 2, "{lines:?}");
        assert_one_at_a_time(held);

        let bound = if example == "embed" {
            "--wait-limit-ms"
        } else {
            "--interrupt-after-ms"
        };
        let lines = run_example(
            example,
            &[
                "--concurrent",
                bound,
                "300",
                plugin,
                "hold acme/a 1500",
                "hold acme/a 1500",
            ],
        );
        let mut replies = reply_to(&lines, "hold acme/a 1500");
        replies.sort();
        assert_eq!(replies.len(), 2, "{lines:?}");
        assert_eq!(replies[0], "plugin error: Timeout", "{lines:?}");
        assert!(replies[1].starts_with("token="), "{lines:?}");
    }
}

/// `--zookeeper` runs both examples on a real ZooKeeper, through the CLI's
/// own backend selection; no lock node is left after either.
#[test]
fn both_examples_run_on_zookeeper_and_leave_no_node() {
    let server = ZkServer::start();
    let address = server.address();
    let plugin = Guest::AcmePlugin.path();
    for example in ["embed", "embed_sync"] {
        let root = format!("/{example}");
        let events = ["hold acme/a 20", "trap acme/b 50", "wait acme/b 2000"];
        let mut args = vec!["--zookeeper", &address, "--root", &root, plugin];
        args.extend(events);
        let lines = run_example(example, &args);
        assert_eq!(lines[0], "engine: zookeeper", "{lines:?}");
        expect_replies(
            &lines,
            &[
                (events[0], "token="),
                (events[1], "plugin trapped"),
                (events[2], "token="),
            ],
        );
        block_on(async {
            let probe = ZkProbe::connect(&address, &root).await;
            crate::zookeeper::assert_no_lock_nodes(&probe).await;
        });
    }
}

/// Asserts that each `(event, expected)`: the example printed one reply to
/// `event`, containing `expected`.
fn expect_replies(lines: &[String], expected: &[(&str, &str)]) {
    for (event, text) in expected {
        let replies = reply_to(lines, event);
        assert!(
            replies.len() == 1 && replies[0].contains(text),
            "{event}: expected one reply with {text:?}: {lines:?}"
        );
    }
}
