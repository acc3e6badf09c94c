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
