//! A network partition that keeps connections open (nothing flows): the cut-off
//! holder reports `suspended` within the client's connection timeout and `lost`
//! no later than another host is granted the lock; a fenced store never accepts
//! a write from the stale holder.

use std::time::{Duration, Instant};

use wardlock_host::{GrantStatus, LockBackend, Mode};
use wardlock_tests::TEST_WAIT_LIMIT;
use wardlock_tests::fenced::FencedStore;
use wardlock_tests::name;
use wardlock_tests::probe::{Probe, ZkProbe};
use wardlock_tests::proxy::Proxy;
use wardlock_tests::zookeeper::ZkServer;
use wardlock_zookeeper::{ZooKeeperBackend, ZooKeeperConfig};

const ROOT: &str = "/wardlock-partition";
const SESSION_TIMEOUT: Duration = Duration::from_secs(4);

async fn backend(address: &str) -> ZooKeeperBackend {
    let config = ZooKeeperConfig::new(address)
        .root(ROOT)
        .session_timeout(SESSION_TIMEOUT);
    ZooKeeperBackend::connect(config).await.expect("backend")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partition_reports_lost_before_another_host_is_granted() {
    let server = ZkServer::start();
    let proxy = Proxy::start(server.address()).await;
    let cut_off = backend(&proxy.address()).await;
    let other = backend(&server.address()).await;
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    let store = std::sync::Arc::new(std::sync::Mutex::new(FencedStore::default()));

    let holder = cut_off.open_session("cut-off holder");
    let held = holder
        .acquire(&name("part"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("hold");
    assert!(store.lock().expect("store").write(held.token));
    let waiter = {
        let other = other.clone();
        let store = store.clone();
        tokio::spawn(async move {
            let session = other.open_session("other host");
            let grant = session
                .acquire(&name("part"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await;
            let granted = Instant::now();
            if let Ok(grant) = &grant {
                assert!(
                    store.lock().expect("store").write(grant.token),
                    "newer token"
                );
            }
            (session, grant, granted)
        })
    };
    probe.wait_len("part", 2).await;

    let cut = Instant::now();
    proxy.partition(true);
    let mut suspended_at = None;
    let mut lost_at = None;
    let mut stale_writes = 0;
    // Bounded: at most 3 session timeouts, polling every 5 ms.
    while cut.elapsed() < SESSION_TIMEOUT * 3 {
        match holder.status(held.id) {
            GrantStatus::Held => {
                // The holder believes it holds: its writes must still be fresh.
                if !store.lock().expect("store").write(held.token) {
                    stale_writes += 1;
                }
            }
            GrantStatus::Suspended => {
                suspended_at.get_or_insert(cut.elapsed());
            }
            GrantStatus::Lost => {
                lost_at = Some(cut.elapsed());
                break;
            }
            GrantStatus::Released => panic!("released by itself"),
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (session, grant, granted) = waiter.await.expect("waiter");
    let grant = grant.expect("the other host is granted the lock");
    let granted_at = granted.saturating_duration_since(cut);
    assert!(grant.token > held.token, "fencing token grows");
    let suspended_at = suspended_at.expect("never suspended");
    let lost_at = lost_at.expect("never lost");
    eprintln!(
        "{{\"metric\":\"partition\",\"session_timeout_ms\":{},\"suspended_ms\":{},\"lost_ms\":{},\"other_granted_ms\":{}}}",
        SESSION_TIMEOUT.as_millis(),
        suspended_at.as_millis(),
        lost_at.as_millis(),
        granted_at.as_millis()
    );
    // The client's connection timeout is 2/5 of the session timeout.
    assert!(
        suspended_at <= SESSION_TIMEOUT * 2 / 5,
        "suspended at {suspended_at:?}"
    );
    assert!(
        lost_at <= granted_at + Duration::from_millis(50),
        "lost at {lost_at:?}, other host granted at {granted_at:?}"
    );
    assert_eq!(stale_writes, 0);
    // The stale holder's token is refused from now on.
    assert!(!store.lock().expect("store").write(held.token));
    assert_eq!(store.lock().expect("store").rejected, 1);

    // Healed: the old grant stays lost; the cut-off host takes new locks on a new
    // session.
    proxy.partition(false);
    session.release(grant.id).expect("release");
    let again = cut_off.open_session("after the partition");
    let next = again
        .acquire(&name("part"), Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("acquire after healing");
    assert!(store.lock().expect("store").write(next.token));
    assert_eq!(holder.status(held.id), GrantStatus::Lost);
    again.release(next.id).expect("release");
    drop(holder);
    probe.wait_len("part", 0).await;
}

/// Partitions under contention, judged by the one history checker: two hosts
/// × three workers take turns on one lock, and three times, as a worker of
/// the first host begins a turn, that host's link is cut (nothing flows,
/// nothing closes) for longer than its session timeout. The first host's
/// turns last longer than the session (6 s between reading the set and
/// writing it), so each cut catches a holder: it must be told `lost` before
/// the other host is granted (no two holds overlap before one was told
/// `lost`), and tokens rise from hold to hold. The holder told `lost` still
/// writes the plain set when its turn ends, so lost updates are expected and
/// counted, not refused (the guarded store is what fences such a write:
/// `fence.rs`); so are the failed releases of lost grants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_under_contention_keep_the_checker_s_rules() {
    const CUTS: u64 = 3;
    let server = ZkServer::start();
    let proxy = Proxy::start(server.address()).await;
    let hosts: Vec<std::sync::Arc<dyn LockBackend>> = vec![
        std::sync::Arc::new(backend(&proxy.address()).await),
        std::sync::Arc::new(backend(&server.address()).await),
    ];
    let contention = wardlock_tests::chaos::Contention::start_with_holds(
        &hosts,
        3,
        "chaos",
        TEST_WAIT_LIMIT,
        &[SESSION_TIMEOUT + Duration::from_secs(2)],
    );
    for _ in 0..CUTS {
        contention.until_next_turn(0).await;
        proxy.partition(true);
        // Past the session timeout: the server expires the cut-off session.
        tokio::time::sleep(SESSION_TIMEOUT + Duration::from_secs(2)).await;
        proxy.partition(false);
    }
    let report = contention.finish().await;
    eprintln!(
        "{{\"metric\":\"partition_chaos\",\"cuts\":{CUTS},{}}}",
        report.json_fields()
    );
    assert!(report.increments > 0, "{report:?}");
    assert_eq!(
        report.double_holders, 0,
        "double holders: {:#?}",
        report.problems
    );
    assert_eq!(
        report.token_regressions, 0,
        "tokens went down: {:#?}",
        report.problems
    );
    assert!(
        report.told_lost >= CUTS,
        "{} holds told lost in {CUTS} cuts: {report:?}",
        report.told_lost
    );
    let probe = ZkProbe::connect(&server.address(), ROOT).await;
    probe.wait_len("chaos", 0).await;
}
