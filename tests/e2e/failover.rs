//! Failovers ride through: two hosts × four workers contend on one lock of a
//! 3-node ensemble while its leader is killed and restarted every ~5 s for 40 s,
//! once with every worker queueing on its own node (the library's default) and
//! once with host-local hand-off, on one ensemble. No double holder (a
//! create-new marker file), the counter exact, no error seen by a worker, no
//! lock node left.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use wardlock_host::backend::zookeeper::{LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};
use wardlock_host::{LockBackend, Mode};
use wardlock_tests::name;
use wardlock_tests::probe::{Probe, ZkProbe};
use wardlock_tests::zookeeper::ensemble::Ensemble;

const ROOT: &str = "/wardlock-failover";
const CHAOS: Duration = Duration::from_secs(40);
const KILL_EVERY: Duration = Duration::from_secs(5);
const HOSTS: usize = 2;
const WORKERS: usize = 4;
/// Most acquisitions per worker and phase: bounds the loop in count as well as
/// in time (a phase makes a few hundred in all).
const MAX_OPS: usize = 20_000;

#[derive(Default)]
struct Tally {
    increments: AtomicUsize,
    double_holders: AtomicUsize,
    errors: AtomicUsize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_failovers_are_invisible_to_holders() {
    let mut ensemble = Ensemble::start();
    chaos_phase(&mut ensemble, "own-nodes", None).await;
    // Guests of a host hand the lock over in memory: failovers must stay
    // invisible with host-local hand-off on too.
    chaos_phase(&mut ensemble, "handoff", Some(LocalHandoff::default())).await;
}

/// Two hosts × four workers on lock `failover` under `ROOT/<phase>` while the
/// leader is killed and restarted every `KILL_EVERY` for `CHAOS`; asserts the
/// phase's figures (printed as one JSON line).
async fn chaos_phase(ensemble: &mut Ensemble, phase: &str, handoff: Option<LocalHandoff>) {
    let root = format!("{ROOT}/{phase}");
    let connect = ensemble.connect_string();
    let dir = tempfile::tempdir().expect("temp dir");
    let counter = dir.path().join("count");
    let marker = dir.path().join("holder");
    std::fs::write(&counter, "0").expect("counter");
    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for host in 0..HOSTS {
        let mut config = ZooKeeperConfig::new(connect.clone())
            .root(root.as_str())
            .session_timeout(Duration::from_secs(10));
        if let Some(handoff) = handoff {
            config = config.local_handoff(handoff);
        }
        let backend = ZooKeeperBackend::connect(config).await.expect("backend");
        for worker in 0..WORKERS {
            let (backend, tally, stop) = (backend.clone(), tally.clone(), stop.clone());
            let (counter, marker) = (counter.clone(), marker.clone());
            workers.push(tokio::spawn(async move {
                let session = backend.open_session(&format!("host {host} worker {worker}"));
                // Bounded by the chaos period (plus one grant's wait) and MAX_OPS.
                for _ in 0..MAX_OPS {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let grant = match session
                        .acquire(
                            &name("failover"),
                            Mode::Exclusive,
                            Some(Duration::from_secs(30)),
                        )
                        .await
                    {
                        Ok(grant) => grant,
                        Err(error) => {
                            eprintln!("host {host} worker {worker}: {error}");
                            tally.errors.fetch_add(1, Ordering::SeqCst);
                            // A back-off, not a synchronisation: the test fails anyway.
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    };
                    let exclusive = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&marker);
                    if exclusive.is_err() {
                        tally.double_holders.fetch_add(1, Ordering::SeqCst);
                    }
                    let value: u64 = std::fs::read_to_string(&counter)
                        .ok()
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    tokio::task::yield_now().await;
                    std::fs::write(&counter, (value + 1).to_string()).expect("write counter");
                    tally.increments.fetch_add(1, Ordering::SeqCst);
                    if exclusive.is_ok() {
                        let _ = std::fs::remove_file(&marker);
                    }
                    if let Err(error) = session.release(grant.id) {
                        eprintln!("host {host} worker {worker}: release: {error}");
                        tally.errors.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }));
        }
    }
    let started = Instant::now();
    let mut kills = 0;
    while started.elapsed() < CHAOS {
        tokio::time::sleep(KILL_EVERY).await;
        if let Some(leader) = ensemble.leader() {
            ensemble.kill(leader);
            // Give the others a moment without it, then bring it back.
            tokio::time::sleep(Duration::from_secs(1)).await;
            ensemble.restart(leader);
            kills += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        tokio::time::timeout(Duration::from_secs(60), worker)
            .await
            .expect("worker finishes")
            .expect("worker");
    }
    let count: usize = std::fs::read_to_string(&counter)
        .expect("counter")
        .trim()
        .parse()
        .expect("number");
    let increments = tally.increments.load(Ordering::SeqCst);
    let probe = ZkProbe::connect(&connect, &root).await;
    probe.wait_len("failover", 0).await;
    let left = probe.all_nodes().await;
    eprintln!(
        "{{\"metric\":\"failover\",\"phase\":\"{phase}\",\"kills\":{kills},\"increments\":{increments},\"counter\":{count},\"double_holders\":{},\"errors\":{},\"znodes_left\":{}}}",
        tally.double_holders.load(Ordering::SeqCst),
        tally.errors.load(Ordering::SeqCst),
        left.iter()
            .filter(|n| n.contains("__WRIT__") || n.contains("__READ__"))
            .count()
    );
    assert!(kills >= 3, "only {kills} leader kills");
    assert!(increments > 0);
    assert_eq!(tally.double_holders.load(Ordering::SeqCst), 0);
    assert_eq!(count, increments, "lost updates");
    assert_eq!(tally.errors.load(Ordering::SeqCst), 0);
    assert!(
        !left
            .iter()
            .any(|n| n.contains("__WRIT__") || n.contains("__READ__")),
        "{left:?}"
    );
}
