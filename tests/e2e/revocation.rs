//! Revocation through guests built against `wardlock:lock@0.2.2` (`lockctl2`):
//! a holder parked on `lock.subscribe-revocation` is woken by another guest's
//! `request-revocation`, gives the lock up, and the asker gets it — on the
//! in-memory backend, on ZooKeeper and on ZooKeeper with host-local hand-off;
//! the time from the request reaching the host to the holder's reaction is
//! measured. Interop with the real Curator: a revocable `InterProcessMutex`
//! gives the lock up when a guest asks, and a guest holder hears Curator's
//! `Revoker.attemptRevoke`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedReceiver;
use wardlock_host::runner::{InstanceReport, Runner, RunnerConfig};
use wardlock_host::{LockBackend, LockPolicy, MemoryBackend};
use wardlock_tests::interop::Foreign;
use wardlock_tests::tap::{self, Tap, Tapped};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::{Guest, TEST_WAIT_LIMIT, assert_success, lines, runner_with, spawn_run};
use wardlock_zookeeper::{Dialect, LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};

use crate::zookeeper::ROOT;

/// What the holder runs: take `r`, ask once (on ZooKeeper this sets the data
/// watch), take `armed` (the test's cue), wait for revocation, and on waking
/// take `ack` at once (the host sees when) and release `r`.
const HOLDER: &[&str] = &[
    "acquire x - r",
    "revoked 1",
    "acquire x - armed",
    "await-revocation 1 ack 20000",
    "release 1",
];

/// What the asker runs: ask the holders of `r` to give it up, then wait for it.
const ASKER: &[&str] = &["revoke r", "acquire x 20000 r"];

/// A `lockctl2` runner on `backend`, every lock request tapped.
fn tapped_runner(backend: Arc<dyn LockBackend>) -> (Arc<Runner>, UnboundedReceiver<Tapped>) {
    let (tap, requests) = Tap::new(backend);
    let runner = runner_with(
        Guest::Lockctl2,
        RunnerConfig {
            backend: tap,
            policy: Arc::new(LockPolicy::new()),
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    );
    (runner, requests)
}

/// One round's figures: from the request reaching the host, and from the
/// backend answering it (the host knows: on ZooKeeper the write is committed,
/// and the holder's watch event reaches the host's session before the answer
/// does), to the holder's reaction.
struct Round {
    from_request: Duration,
    from_known: Duration,
}

/// `rounds` rounds of holder and asker; checks both outputs and returns each
/// round's figures.
async fn revoke_rounds(
    runner: &Arc<Runner>,
    requests: &mut UnboundedReceiver<Tapped>,
    rounds: usize,
) -> Vec<Round> {
    let mut figures = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let holder = spawn_run(runner, 2 * round, HOLDER);
        tap::wait_for(requests, "granted armed").await;
        let asker = spawn_run(runner, 2 * round + 1, ASKER);
        let arrived = tap::wait_for(requests, "revoke r").await;
        // The answer and the holder's reaction come in either order.
        let [known, woke] = arrivals(requests, ["asked r", "ack"]).await;
        figures.push(Round {
            from_request: woke.saturating_duration_since(arrived),
            from_known: woke.saturating_duration_since(known),
        });
        holder_gave_up(holder.await.expect("holder task"));
        asker_got_it(asker.await.expect("asker task"));
    }
    figures
}

/// When each of `wanted` was tapped, in whatever order they come (at most
/// [`TEST_WAIT_LIMIT`]).
async fn arrivals<const N: usize>(
    requests: &mut UnboundedReceiver<Tapped>,
    wanted: [&str; N],
) -> [Instant; N] {
    let mut seen: [Option<Instant>; N] = [None; N];
    let collected = tokio::time::timeout(TEST_WAIT_LIMIT, async {
        while seen.iter().any(Option::is_none) {
            let Some((what, at)) = requests.recv().await else {
                return;
            };
            if let Some(i) = wanted.iter().position(|w| *w == what) {
                seen[i].get_or_insert(at);
            }
        }
    })
    .await;
    assert!(collected.is_ok(), "not all of {wanted:?} came: {seen:?}");
    seen.map(|at| at.unwrap_or_else(|| panic!("not all of {wanted:?} came")))
}

/// Checks the [`HOLDER`]'s output: not asked at first, then woken by the
/// revocation request, then released.
fn holder_gave_up(report: InstanceReport) {
    assert_success(&report);
    let out = lines(&report);
    assert_eq!(
        out[1..],
        ["false", out[2].as_str(), "revoked", "ok"],
        "{out:?}"
    );
}

/// Checks the [`ASKER`]'s output: one holder asked, then granted.
fn asker_got_it(report: InstanceReport) {
    assert_success(&report);
    let out = lines(&report);
    assert_eq!(out[0], "asked 1", "{out:?}");
    assert!(out[1].starts_with("h1 token="), "{out:?}");
}

/// Prints the figures as JSON lines and checks issue 13's bar for loss
/// notification, used for revocation too: the holder reacts within 50 ms of
/// the host knowing, every round. The whole path from the request (a
/// ZooKeeper write included, whose fsync stalls under load) is reported,
/// and bounded only by its median.
fn report(backend: &str, figures: &[Round]) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    for (metric, mut latencies) in [
        (
            "revocation_known_to_wake_ms",
            figures.iter().map(|r| r.from_known).collect::<Vec<_>>(),
        ),
        (
            "revocation_request_to_wake_ms",
            figures.iter().map(|r| r.from_request).collect(),
        ),
    ] {
        latencies.sort();
        println!(
            "{{\"metric\":\"{metric}\",\"backend\":\"{backend}\",\"median\":{:.3},\"worst\":{:.3},\"rounds\":{}}}",
            ms(latencies[latencies.len() / 2]),
            ms(latencies[latencies.len() - 1]),
            latencies.len()
        );
    }
    let known: Vec<Duration> = figures.iter().map(|r| r.from_known).collect();
    assert!(
        known.iter().all(|d| *d <= Duration::from_millis(50)),
        "{backend}: the holder reacted over 50 ms after the host knew: {known:?}"
    );
    let mut whole: Vec<Duration> = figures.iter().map(|r| r.from_request).collect();
    whole.sort();
    assert!(
        whole[whole.len() / 2] <= Duration::from_millis(50),
        "{backend}: median request → reaction over 50 ms: {whole:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_gives_up_a_revoked_lock_on_memory() {
    let (runner, mut requests) = tapped_runner(Arc::new(MemoryBackend::new()));
    let figures = revoke_rounds(&runner, &mut requests, 10).await;
    report("memory", &figures);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_gives_up_a_revoked_lock_on_zookeeper() {
    let server = ZkServer::start();
    let backend = crate::zookeeper::backend(&server.address(), Duration::from_secs(10)).await;
    let (runner, mut requests) = tapped_runner(Arc::new(backend));
    let figures = revoke_rounds(&runner, &mut requests, 10).await;
    report("zookeeper", &figures);
}

/// With host-local hand-off the holder's node is the host's: the request
/// writes it, the holder hears it, and the asker (a guest of the same host)
/// is handed the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_gives_up_a_revoked_lock_with_local_handoff() {
    let server = ZkServer::start();
    let config = ZooKeeperConfig::new(server.address())
        .root(ROOT)
        .local_handoff(LocalHandoff::default());
    let backend = ZooKeeperBackend::connect(config).await.expect("backend");
    let (runner, mut requests) = tapped_runner(Arc::new(backend));
    let figures = revoke_rounds(&runner, &mut requests, 10).await;
    report("zookeeper-handoff", &figures);
}

/// A backend in Curator `InterProcessMutex`'s layout, and the lock path
/// Curator uses for the guests' lock `r`.
async fn curator_mutex_backend(server: &ZkServer) -> (Arc<dyn LockBackend>, String) {
    let config = ZooKeeperConfig::new(server.address())
        .root(ROOT)
        .dialect(Dialect::CuratorMutex);
    let backend = ZooKeeperBackend::connect(config).await.expect("backend");
    (Arc::new(backend), format!("{ROOT}/r"))
}

/// A Curator `InterProcessMutex` made revocable holds `r`; a guest's
/// `request-revocation` writes `__REVOKE__` into its node, Curator's listener
/// fires, Curator releases, and the guest is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_revocable_mutex_gives_up_when_a_guest_asks() {
    let server = ZkServer::start();
    let (backend, path) = curator_mutex_backend(&server).await;
    let mut curator = Foreign::curator(&server.address(), &path, "mutex", &["revocable-hold"]);
    curator.expect("holding").await;
    let (runner, _requests) = tapped_runner(backend);
    let asker = spawn_run(&runner, 0, ASKER);
    curator.expect("revoked").await;
    curator.expect("released").await;
    asker_got_it(asker.await.expect("asker task"));
}

/// A guest holds `r`; Curator's `Revoker.attemptRevoke` on the holder's node
/// (found as Curator finds it, the first participant) wakes the guest's
/// `subscribe-revocation`; the guest releases and Curator is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_hears_curators_revoker() {
    let server = ZkServer::start();
    let (backend, path) = curator_mutex_backend(&server).await;
    let (runner, mut requests) = tapped_runner(backend);
    let holder = spawn_run(&runner, 0, HOLDER);
    tap::wait_for(&mut requests, "granted armed").await;
    let mut curator = Foreign::curator(&server.address(), &path, "mutex", &["revoke-holder"]);
    curator.expect("revoked").await;
    curator.expect("acquired").await;
    curator.expect("released").await;
    holder_gave_up(holder.await.expect("holder task"));
}

/// Bad input to `request-revocation` is a typed error, never a trap: a name
/// outside the component's grants is `denied`, a malformed one
/// `invalid-name`; a released handle reports no revocation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_revocation_requests_are_typed_errors() {
    let backend = MemoryBackend::new();
    let policy = LockPolicy::new().grant("jobs").expect("grant");
    let runner = runner_with(
        Guest::Lockctl2,
        RunnerConfig {
            backend: Arc::new(backend),
            policy: Arc::new(policy),
            timeout: Some(TEST_WAIT_LIMIT),
            ..RunnerConfig::default()
        },
    );
    let report = spawn_run(
        &runner,
        0,
        &[
            "revoke other",
            "revoke jobs/../x",
            "revoke jobs/a",
            "acquire x - jobs/a",
            "revoke jobs/a",
            "revoked 1",
            "release 1",
            "revoked 1",
        ],
    )
    .await
    .expect("guest task");
    assert_success(&report);
    let out = lines(&report);
    assert!(out[0].starts_with("err denied: "), "{out:?}");
    assert!(
        out[0].contains("other"),
        "the error names the lock: {out:?}"
    );
    assert!(out[1].starts_with("err invalid-name: "), "{out:?}");
    assert_eq!(out[2], "asked 0", "nobody holds it: {out:?}");
    assert_eq!(out[4..], ["asked 1", "true", "ok", "false"], "{out:?}");
}
