//! Leader election through guests (WIT 0.2.2 `election`, issue 38) on the
//! embedded engine: every call and error case of `lockctl2`'s election
//! commands. The engines' own elections (one leader at a time, terms,
//! takeover, observers) are checked by the conformance kit on every engine,
//! and interop with Curator and `etcdctl elect` in `election_zookeeper` and
//! `election_etcd`.

use std::sync::Arc;

use wardlock_host::runner::{InstanceReport, RunnerConfig};
use wardlock_host::{LockBackend, MemoryBackend};
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, lines, runner_with, spawn_run};

/// The term of an `l<N> term=<T>` line.
fn term(line: &str) -> u64 {
    line.split("term=")
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no term in {line:?}"))
}

/// `commands` in one `lockctl2` instance on `backend`.
async fn lockctl2(backend: &Arc<dyn LockBackend>, commands: &[&str]) -> InstanceReport {
    let runner = runner_with(
        Guest::Lockctl2,
        RunnerConfig {
            backend: backend.clone(),
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    );
    spawn_run(&runner, 0, commands)
        .await
        .expect("lockctl2 task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_election_calls_through_a_guest() {
    election_calls_through_a_guest(Arc::new(MemoryBackend::new())).await;
}

/// Every election call and error case through `lockctl2` on `backend`,
/// whose election `jobs` nobody else uses.
pub(crate) async fn election_calls_through_a_guest(backend: Arc<dyn LockBackend>) {
    let report = lockctl2(
        &backend,
        &[
            "leader jobs",
            "campaign jobs alpha -",
            "observe jobs",
            "oleader o1",
            "proclaim l1 alpha-2",
            "owait o1 10000",
            "oleader o1",
            "owait o1 50",
            "lput l1 epoch one",
            "lstatus l1",
            "campaign jobs again 50",
            "resign l1",
            "resign l1",
            "proclaim l1 ghost",
            "owait o1 10000",
            "leader jobs",
            "campaign ../bad x -",
        ],
    )
    .await;
    let out = lines(&report);
    assert_eq!(out[0], "none", "{out:?}");
    let first = term(&out[1]);
    assert_eq!(out[2], "o1");
    assert_eq!(out[3], format!("alpha term={first}"));
    assert_eq!(out[4], "ok");
    assert_eq!(out[5], "changed", "the observer sees the proclaimed value");
    assert_eq!(out[6], format!("alpha-2 term={first}"));
    assert_eq!(out[7], "timer", "no change since the last read");
    assert!(out[8].starts_with("rev="), "the leader writes: {out:?}");
    assert_eq!(out[9], "held");
    assert_eq!(out[10], "err timeout", "a second candidate waits its turn");
    assert_eq!((out[11].as_str(), out[12].as_str()), ("ok", "err released"));
    assert_eq!(out[13], "err released");
    // A resignation reaches the lock service in the background (etcd,
    // ZooKeeper, Valkey/Redis): the observer waits for it to show.
    assert_eq!(out[14], "changed", "the observer sees the resignation");
    assert_eq!(out[15], "none", "nobody leads after the resignation");
    assert!(out[16].starts_with("err invalid-name"), "{out:?}");

    let next = lockctl2(&backend, &["campaign jobs beta -", "read jobs epoch"]).await;
    let out = lines(&next);
    assert!(term(&out[0]) > first, "terms rise: {out:?}");
    assert_eq!(
        out[1].split(" rev=").next(),
        Some(format!("one token={first}").as_str()),
        "the next leader reads the last one's write"
    );
}
