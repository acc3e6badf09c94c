//! Hand-off between hosts: two backends on one store are two hosts on one
//! lock service. A host's guests share one node per lock; another host
//! waiting behind it is served within the fairness bound however busy the
//! first host's guests keep the lock; a session the store expires loses its
//! grants, and the host's next session serves again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use wardlock_backend::handoff::LocalHandoff;
use wardlock_backend::{GrantStatus, LockBackend, Mode};
use wardlock_conformance::{TEST_WAIT_LIMIT, name};
use wardlock_node_engine::{NodeBackend, NodeConfig, Store};

/// Waits (bounded) until `check` holds.
async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + TEST_WAIT_LIMIT;
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hosts_guests_share_one_node() {
    let store = Store::new();
    let host = NodeBackend::new(store.clone(), NodeConfig::default());
    let lock = name("shared/one-node");
    let first = host.open_session("guest 1");
    let held = first
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("first guest");
    // The waiters report their grants in the order they come: which of the
    // two queues first is the scheduler's choice, and the test releases each
    // grant only once it has it (awaiting guest 2 while guest 3 held the lock
    // would wait on itself).
    let (granted, mut grants) = tokio::sync::mpsc::unbounded_channel();
    for guest in 2..=3 {
        let session = host.open_session(&format!("guest {guest}"));
        let (lock, granted) = (lock.clone(), granted.clone());
        tokio::spawn(async move {
            let grant = session
                .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await
                .expect("waiting guest");
            let _ = granted.send((session, grant));
        });
    }
    // A waiter that fails drops its sender: the receiver then ends, not waits.
    drop(granted);
    eventually("three local contenders", async || {
        host.local_contenders(&lock).await == 3
    })
    .await;
    assert_eq!(
        host.nodes(&lock).len(),
        1,
        "one node for the host's three guests"
    );
    first.release(held.id).expect("release");
    let mut last = held.token;
    for _ in 2..=3 {
        let (session, grant) = grants.recv().await.expect("a waiter's grant");
        assert!(grant.token > last, "tokens rise across local hand-offs");
        last = grant.token;
        assert_eq!(host.nodes(&lock).len(), 1, "handed over in memory");
        session.release(grant.id).expect("release");
    }
    eventually("the node gone", async || host.nodes(&lock).is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_host_is_served_within_the_fairness_bound() {
    let store = Store::new();
    // No bound on the count: the time bound alone ends the busy host's turn.
    let busy = NodeConfig {
        local_handoff: LocalHandoff {
            max_handoffs: u32::MAX,
            max_time: Duration::from_millis(50),
            linger: Duration::ZERO,
        },
        ..NodeConfig::default()
    };
    let a = NodeBackend::new(store.clone(), busy);
    let b = NodeBackend::new(store.clone(), NodeConfig::default());
    let lock = name("shared/fair");
    // Host A's guests take the lock in turn, always one of them waiting:
    // without the bound, host A would hand it among them until its node's
    // grants run out.
    let stop = Arc::new(AtomicBool::new(false));
    let grants = Arc::new(AtomicU32::new(0));
    let mut guests = Vec::new();
    for guest in 0..3 {
        let (session, lock) = (a.open_session(&format!("a{guest}")), lock.clone());
        let (stop, grants) = (stop.clone(), grants.clone());
        guests.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let grant = session
                    .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                    .await
                    .expect("a guest of host A");
                grants.fetch_add(1, Ordering::Relaxed);
                // Held a moment: unbounded, the host's 65,536 grants per
                // node would keep host B waiting for over a minute.
                tokio::time::sleep(Duration::from_millis(1)).await;
                session.release(grant.id).expect("release");
            }
        }));
    }
    eventually("host A busy", async || grants.load(Ordering::Relaxed) > 5).await;
    let other = b.open_session("b");
    let started = tokio::time::Instant::now();
    let grant = other
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("host B is served");
    let waited = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    // The bound is 50 ms; unbounded, host B would wait for host A's 65,536
    // grants of at least 1 ms each (over a minute). 20 s tells the two apart
    // on a machine as busy as a CI run's, whose other tests share the cores.
    assert!(waited < Duration::from_secs(20), "host B waited {waited:?}");
    other.release(grant.id).expect("release");
    for guest in guests {
        guest.await.expect("guest task");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_session_loses_its_grants_and_the_next_one_serves() {
    let store = Store::new();
    let config = NodeConfig {
        session_timeout: Duration::from_secs(1),
        ..NodeConfig::default()
    };
    let a = NodeBackend::new(store.clone(), config);
    let b = NodeBackend::new(store.clone(), config);
    let lock = name("shared/expiry");
    let guest = a.open_session("a");
    let held = guest
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("hold");
    let changed = guest.status_changed(held.id, GrantStatus::Held);
    store.expire_session(a.session_id().expect("a session"));
    let now = tokio::time::timeout(TEST_WAIT_LIMIT, changed)
        .await
        .expect("the guest learns of the expiry");
    assert_eq!(now, GrantStatus::Lost);
    assert_eq!(guest.status(held.id), GrantStatus::Lost);
    // The node went with the session: host B takes the lock.
    let other = b.open_session("b");
    let taken = other
        .try_acquire(&lock, Mode::Exclusive)
        .await
        .expect("try")
        .expect("host A's node is gone");
    other.release(taken.id).expect("release");
    guest.release(held.id).expect("release the lost grant");
    // Host A's next session serves again, with a higher token.
    let again = guest
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("next session");
    assert!(again.token > taken.token);
    guest.release(again.id).expect("release");
}
