//! Failovers ride through: two hosts × four workers contend on one lock of a
//! 3-node ensemble while its leader is killed and restarted every ~5 s for 40 s,
//! once with every worker queueing on its own node (the library's default) and
//! once with host-local hand-off, on one ensemble. No double holder (a
//! create-new marker file), the counter exact, no error seen by a worker, no
//! lock node left.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wardlock_host::LockBackend;
use wardlock_tests::chaos::Contention;
use wardlock_tests::impatient::Impatient;
use wardlock_tests::probe::{Probe, ZkProbe};
use wardlock_tests::zookeeper::ZkServer;
use wardlock_tests::zookeeper::ensemble::Ensemble;
use wardlock_zookeeper::{LocalHandoff, ZooKeeperBackend, ZooKeeperConfig};

const ROOT: &str = "/wardlock-failover";
const CHAOS: Duration = Duration::from_secs(40);
const KILL_EVERY: Duration = Duration::from_secs(5);
const HOSTS: usize = 2;
const WORKERS: usize = 4;

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
    let mut hosts: Vec<Arc<dyn LockBackend>> = Vec::new();
    for _ in 0..HOSTS {
        let mut config = ZooKeeperConfig::new(connect.clone())
            .root(root.as_str())
            .session_timeout(Duration::from_secs(10));
        if let Some(handoff) = handoff {
            config = config.local_handoff(handoff);
        }
        hosts.push(Arc::new(
            ZooKeeperBackend::connect(config).await.expect("backend"),
        ));
    }
    let contention = Contention::start(&hosts, WORKERS, "failover", Duration::from_secs(30));
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
    let report = contention.finish().await;
    let probe = ZkProbe::connect(&connect, &root).await;
    probe.wait_len("failover", 0).await;
    let left = probe.all_nodes().await;
    eprintln!(
        "{{\"metric\":\"failover\",\"phase\":\"{phase}\",\"kills\":{kills},{},\"znodes_left\":{}}}",
        report.json_fields(),
        left.iter()
            .filter(|n| n.contains("__WRIT__") || n.contains("__READ__"))
            .count()
    );
    assert!(kills >= 3, "only {kills} leader kills");
    report.assert_invisible();
    assert!(
        !left
            .iter()
            .any(|n| n.contains("__WRIT__") || n.contains("__READ__")),
        "{left:?}"
    );
}

/// The checker of the chaos runs catches a mutant engine: the same workers
/// on [`Impatient`] (the ZooKeeper recipe with a grant that does not wait
/// for its predecessor) make double holders and tokens that do not rise,
/// which the history shows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_checker_catches_a_grant_that_does_not_wait_for_its_predecessor() {
    let server = ZkServer::start();
    let mutant = Impatient::connect(&server.address(), &format!("{ROOT}/mutant")).await;
    let hosts: Vec<Arc<dyn LockBackend>> = (0..HOSTS)
        .map(|_| Arc::new(mutant.clone()) as Arc<dyn LockBackend>)
        .collect();
    let contention = Contention::start(&hosts, WORKERS, "failover", Duration::from_secs(30));
    // The run's length, not a synchronisation: a turn takes a round trip or
    // two, a second makes a few hundred.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let report = contention.finish().await;
    eprintln!(
        "{{\"metric\":\"failover_mutant\",{}}}",
        report.json_fields()
    );
    assert!(report.increments > 0, "{report:?}");
    assert!(
        report.double_holders > 0,
        "the mutant went unseen: {report:?}"
    );
    // Its made-up grants carry no token of the engine's (0).
    assert!(report.token_regressions > 0, "{report:?}");
}
