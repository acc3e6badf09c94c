//! The conformance suite's revocation check (issue 13): it holds on every
//! backend, ZooKeeper with host-local hand-off included (where the host's
//! holders share one node, so one write asks them all).

use wardlock_backend::Mode;

use super::{queued, skipped};
use crate::{Subject, TEST_WAIT_LIMIT, name};

/// A revocation request reaches every current holder (three readers), not a
/// waiter: each holder's `revoked` future wakes and `revocation_requested`
/// turns true (also for a holder that first asks after the request), while
/// the locks stay held until released (then: false); then the waiting
/// writer is granted, and is not asked (with hand-off: it gets a new node,
/// the revoked one drained). Nobody holding: 0 asked.
pub(super) async fn revocation_reaches_every_holder(s: &Subject) {
    if !s.features.revocation {
        return skipped("revocation_reaches_every_holder", "revocation");
    }
    let lock = name("conf/revoke");
    let a = s.backend.open_session("a");
    let b = s.backend.open_session("b");
    let asker = s.backend.open_session("asker");
    let ra = a.acquire(&lock, Mode::Shared, None).await.expect("a reads");
    let rb = b.acquire(&lock, Mode::Shared, None).await.expect("b reads");
    // A holder that asks only after the request (no watch set before it).
    let c = s.backend.open_session("c");
    let rc = c.acquire(&lock, Mode::Shared, None).await.expect("c reads");
    assert!(
        !a.revocation()
            .expect("revocation")
            .revocation_requested(ra.id)
            .await,
        "nobody asked yet"
    );
    let woken_a = a.revocation().expect("revocation").revoked(ra.id);
    let woken_b = b.revocation().expect("revocation").revoked(rb.id);
    let writer = queued(s, "w", "conf/revoke", Mode::Exclusive, 4).await;
    let asked = asker
        .revocation()
        .expect("revocation")
        .request_revocation(&lock)
        .await
        .expect("request revocation");
    // Three holders; with host-local hand-off they share one node (asked once).
    assert!((1..=3).contains(&asked), "asked {asked}");
    tokio::time::timeout(TEST_WAIT_LIMIT, woken_a)
        .await
        .expect("a's revoked future woke");
    tokio::time::timeout(TEST_WAIT_LIMIT, woken_b)
        .await
        .expect("b's revoked future woke");
    assert!(
        a.revocation()
            .expect("revocation")
            .revocation_requested(ra.id)
            .await
    );
    assert!(
        b.revocation()
            .expect("revocation")
            .revocation_requested(rb.id)
            .await
    );
    assert!(
        c.revocation()
            .expect("revocation")
            .revocation_requested(rc.id)
            .await,
        "seen on first asking"
    );
    assert!(!writer.is_finished(), "cooperative: the readers still hold");
    a.release(ra.id).expect("release a");
    b.release(rb.id).expect("release b");
    c.release(rc.id).expect("release c");
    assert!(
        !a.revocation()
            .expect("revocation")
            .revocation_requested(ra.id)
            .await,
        "released: not asked"
    );
    let (w, granted) = writer.await.expect("writer task");
    let granted = granted.expect("writer granted once the readers gave up");
    assert!(
        !w.revocation()
            .expect("revocation")
            .revocation_requested(granted.id)
            .await,
        "a holder granted after the request was not asked"
    );
    w.release(granted.id).expect("release w");
    s.wait_len("conf/revoke", 0).await;
    assert_eq!(
        asker
            .revocation()
            .expect("revocation")
            .request_revocation(&lock)
            .await,
        Ok(0),
        "nobody holds"
    );
}
