//! Mutual exclusion, shared readers and fair FIFO order across guest instances.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use wardlock_host::runner::{FileIo, Preopen, Runner, RunnerConfig};
use wardlock_host::{LockPolicy, MemoryBackend, Mode};
use wardlock_tests::{
    Guest, assert_success, hold, lines, lockctl, name, run_instances, runner, runner_in,
    runner_with, spawn_lockctl, tally, token_of, value_in, wait_counts,
};

/// Many counter instances doing read-modify-write on one file under one lock lose
/// no update: the final count is the sum of all increments.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_instances_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let backend = MemoryBackend::new();
    let runner = runner_in(Guest::Counter, Arc::new(backend.clone()), dir.path(), None);
    counters_count_exactly(&runner, dir.path()).await;
    assert!(
        backend.snapshot(&name("orders")).is_empty(),
        "no lock left behind"
    );
}

/// The same with the guests' file operations on Tokio's blocking pool
/// (`FileIo::Pooled`, for slow filesystems) rather than on their own thread
/// (the default, above): the count is exact either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_instances_with_pooled_file_io_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let config = RunnerConfig {
        backend: Arc::new(MemoryBackend::new()),
        preopens: vec![Preopen::parse(&format!("{}::/data", dir.path().display()))],
        file_io: FileIo::Pooled,
        ..RunnerConfig::default()
    };
    assert!(!config.file_io.blocks_the_thread());
    counters_count_exactly(&runner_with(Guest::Counter, config), dir.path()).await;
}

/// 8 counter instances × 40 increments of `/data/count` (`dir/count`)
/// under the lock `orders`: all succeed, and the count is 320.
async fn counters_count_exactly(runner: &Arc<Runner>, dir: &Path) {
    let (instances, iterations) = (8, 40);
    let reports = run_instances(
        runner,
        instances,
        &["orders", &iterations.to_string(), "/data/count"],
    )
    .await;
    reports.iter().for_each(assert_success);
    let expected = u64::try_from(instances * iterations).expect("small");
    assert_eq!(value_in(dir, "count"), expected);
}

/// Readers and writers mixed: writers exclusive, readers never see a half-done write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_writers_example_is_clean() {
    let dir = tempfile::tempdir().unwrap();
    let backend = MemoryBackend::new();
    let runner = runner_in(
        Guest::ReadersWriters,
        Arc::new(backend.clone()),
        dir.path(),
        None,
    );
    let mut writes = 0;
    for report in run_instances(&runner, 6, &["doc", "30", "/data/value", "30"]).await {
        assert_success(&report);
        let out = report.stdout_text();
        assert!(out.contains("violations=0"), "{out}");
        writes += tally(&out, "writes");
    }
    assert_eq!(
        value_in(dir.path(), "value"),
        2 * writes,
        "every write added exactly 2"
    );
}

/// A guest takes a shared lock while another party holds it shared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_hold_together() {
    let backend = MemoryBackend::new();
    let (_native, _reader) = hold(&backend, "doc", Mode::Shared).await;
    let report = lockctl(
        &backend,
        &["try shared doc", "acquire shared - doc", "status 2"],
    )
    .await;
    let out = lines(&report);
    assert!(out[0].starts_with("h1 token="), "{out:?}");
    assert!(out[1].starts_with("h2 token="), "{out:?}");
    assert_eq!(out[2], "held");
}

/// Writers exclude readers and readers exclude writers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_exclude_readers() {
    let backend = MemoryBackend::new();
    let (native, reader) = hold(&backend, "doc", Mode::Shared).await;
    let report = lockctl(&backend, &["try exclusive doc", "acquire exclusive 30 doc"]).await;
    assert_eq!(lines(&report), ["none", "err timeout"]);
    native.release(reader.id).unwrap();

    let _writer = native
        .acquire(&name("doc"), Mode::Exclusive, None)
        .await
        .unwrap();
    let report = lockctl(
        &backend,
        &[
            "try shared doc",
            "try exclusive doc",
            "acquire shared 30 doc",
        ],
    )
    .await;
    assert_eq!(lines(&report), ["none", "none", "err timeout"]);
    assert_eq!(
        backend.snapshot(&name("doc")).len(),
        1,
        "timed-out waits left nothing queued"
    );
}

/// Exclusive waiters are granted in arrival order; a queued writer holds back
/// readers that arrive after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_follow_arrival_order() {
    let backend = MemoryBackend::new();
    let (native, held) = hold(&backend, "q", Mode::Exclusive).await;
    let mut waiters = Vec::new();
    for queued in 1..=3 {
        let guest_backend = backend.clone();
        waiters.push(tokio::spawn(async move {
            lockctl(&guest_backend, &["acquire exclusive - q"]).await
        }));
        wait_counts(&backend, "q", 1, queued).await;
    }
    native.release(held.id).unwrap();
    let mut tokens = Vec::new();
    for waiter in waiters {
        let report = waiter.await.unwrap();
        tokens.push(token_of(&lines(&report)[0]));
    }
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "grant order {tokens:?} is not arrival order"
    );
    assert!(tokens[0] > held.token);

    // Shared holder, then a queued writer, then a reader: the reader waits.
    let reader = native
        .acquire(&name("q"), Mode::Shared, None)
        .await
        .unwrap();
    let writer = spawn_lockctl(&backend, &["acquire exclusive - q"]);
    wait_counts(&backend, "q", 1, 1).await;
    let late = lockctl(&backend, &["try shared q"]).await;
    assert_eq!(
        lines(&late),
        ["none"],
        "a reader may not overtake a queued writer"
    );
    let late_reader = spawn_lockctl(&backend, &["acquire shared - q"]);
    wait_counts(&backend, "q", 1, 2).await;
    native.release(reader.id).unwrap();
    let writer_token = token_of(&lines(&writer.await.unwrap())[0]);
    let reader_token = token_of(&lines(&late_reader.await.unwrap())[0]);
    assert!(
        writer_token < reader_token,
        "writer {writer_token} must precede reader {reader_token}"
    );
}

/// Fencing tokens grow with every grant of a name, across instances.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fencing_tokens_strictly_increase() {
    let backend = MemoryBackend::new();
    let mut last = 0;
    for _ in 0..3 {
        let report = lockctl(
            &backend,
            &[
                "acquire exclusive - t",
                "release 1",
                "acquire shared - t",
                "try exclusive other",
            ],
        )
        .await;
        let out = lines(&report);
        let (first, second) = (token_of(&out[0]), token_of(&out[2]));
        assert!(
            last < first && first < second,
            "tokens {last} {first} {second}"
        );
        last = second;
    }
    let policy_runner = runner(
        Guest::Lockctl,
        &backend,
        LockPolicy::new(),
        Some(Duration::from_secs(60)),
    );
    let report = policy_runner
        .run(0, &["acquire exclusive - t".to_string()])
        .await;
    assert!(token_of(&lines(&report)[0]) > last);
}
