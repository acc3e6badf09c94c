//! The table over the memory engine: what it records, and the cycles it
//! breaks and never breaks.

use std::sync::Arc;
use std::time::Duration;

use super::LockTable;
use crate::backend::memory::MemoryBackend;
use crate::backend::{BackendError, LockBackend, LockSession, Mode};
use crate::name::LockName;

fn name(n: &str) -> LockName {
    LockName::new(n).expect("a valid name")
}

fn tracked() -> (LockTable, Arc<dyn LockBackend>) {
    let table = LockTable::new("test-host");
    let backend = table.wrap(Arc::new(MemoryBackend::new()));
    (table, backend)
}

/// Waits until the table lists `waiters` waits in all.
async fn until_waiting(table: &LockTable, waiters: usize) {
    let mut changes = table.changes();
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let snapshot = table.snapshot(None);
            if snapshot
                .locks
                .iter()
                .map(|l| l.waiters.len())
                .sum::<usize>()
                == waiters
            {
                return;
            }
            let _ = changes.changed().await;
        }
    })
    .await
    .expect("the waits were never queued");
}

#[tokio::test]
async fn holders_and_waiters_are_listed_and_forgotten() {
    let (table, backend) = tracked();
    let a = backend.open_session("plugin-a#1");
    let b: Arc<dyn LockSession> = Arc::from(backend.open_session("plugin-b#2"));
    let grant = a
        .acquire(&name("x"), Mode::Exclusive, None)
        .await
        .expect("granted");
    let waiter = b.clone();
    let wait = tokio::spawn(async move { waiter.acquire(&name("x"), Mode::Shared, None).await });
    until_waiting(&table, 1).await;

    let snapshot = table.snapshot(Some("x"));
    assert_eq!(snapshot.host, "test-host");
    assert_eq!(snapshot.locks.len(), 1);
    let x = &snapshot.locks[0];
    assert_eq!((x.name.as_str(), x.engine), ("x", "memory"));
    assert_eq!(x.holders[0].owner, "plugin-a#1");
    assert_eq!(x.holders[0].mode, "exclusive");
    assert_eq!(x.holders[0].token, Some(grant.token));
    assert_eq!(x.waiters[0].owner, "plugin-b#2");
    assert_eq!((x.waiters[0].mode, x.waiters[0].position), ("shared", 1));
    assert!(table.snapshot(Some("y")).locks.is_empty());

    a.release(grant.id).expect("released");
    wait.await
        .expect("no panic")
        .expect("granted after the release");
    let x = &table.snapshot(None).locks[0];
    assert_eq!((x.holders.len(), x.waiters.len()), (1, 0));
    drop(b);
    assert!(
        table.snapshot(None).locks.is_empty(),
        "a dropped session leaves nothing"
    );
}

#[tokio::test]
async fn a_withdrawn_wait_is_forgotten() {
    let (table, backend) = tracked();
    let a = backend.open_session("a");
    let b = backend.open_session("b");
    let _held = a
        .acquire(&name("x"), Mode::Exclusive, None)
        .await
        .expect("granted");
    let waited = tokio::time::timeout(
        Duration::from_millis(50),
        b.acquire(&name("x"), Mode::Exclusive, None),
    )
    .await;
    assert!(waited.is_err(), "x is held");
    let x = &table.snapshot(None).locks[0];
    assert!(x.waiters.is_empty(), "the dropped wait is gone: {x:?}");
}

#[tokio::test]
async fn an_ab_ba_cycle_refuses_the_closing_wait_and_lets_the_other_proceed() {
    let (table, backend) = tracked();
    let a = backend.open_session("a");
    let b: Arc<dyn LockSession> = Arc::from(backend.open_session("b"));
    let _ax = a
        .acquire(&name("x"), Mode::Exclusive, None)
        .await
        .expect("x");
    let by = b
        .acquire(&name("y"), Mode::Exclusive, None)
        .await
        .expect("y");
    let waiter = b.clone();
    let b_waits =
        tokio::spawn(async move { waiter.acquire(&name("x"), Mode::Exclusive, None).await });
    until_waiting(&table, 1).await;

    let closing = a.acquire(&name("y"), Mode::Exclusive, None).await;
    assert_eq!(closing, Err(BackendError::WouldDeadlock("y".into())));
    let snapshot = table.snapshot(None);
    assert_eq!(snapshot.cycles.len(), 1);
    assert_eq!(snapshot.cycles_found, 1);
    let cycle = &snapshot.cycles[0];
    assert_eq!(cycle.scope, "host");
    assert_eq!(cycle.broken.as_deref(), Some("a"));
    let mut parties = cycle.parties.clone();
    parties.sort();
    assert_eq!(parties, ["a", "b"]);

    // The loser gives up what it holds; the other proceeds.
    drop(a);
    b_waits.await.expect("no panic").expect("b gets x");
    b.release(by.id).expect("released");
}

#[tokio::test]
async fn a_grant_that_closes_a_cycle_ends_the_youngest_older_wait() {
    // A grant can close a cycle: a waits for x (held by c), b waits for x
    // behind a, a waits for z (held by b). When c releases x and a gets it,
    // b's wait for x waits for a, who waits for z held by b: the youngest
    // wait in that cycle, a's for z, is an older wait, and is ended.
    let (table, backend) = tracked();
    let a: Arc<dyn LockSession> = Arc::from(backend.open_session("a"));
    let b: Arc<dyn LockSession> = Arc::from(backend.open_session("b"));
    let c = backend.open_session("c");
    let cx = c
        .acquire(&name("x"), Mode::Exclusive, None)
        .await
        .expect("x");
    let _bz = b
        .acquire(&name("z"), Mode::Exclusive, None)
        .await
        .expect("z");
    // a waits for x (held by c): no cycle.
    let a2 = a.clone();
    let a_waits = tokio::spawn(async move { a2.acquire(&name("x"), Mode::Exclusive, None).await });
    until_waiting(&table, 1).await;
    // b waits for x too (behind a): no cycle.
    let b2 = b.clone();
    let b_waits_x =
        tokio::spawn(async move { b2.acquire(&name("x"), Mode::Exclusive, None).await });
    until_waiting(&table, 2).await;
    // a waits for z (held by b): a → b only through z; b → c through x. No cycle.
    let a3 = a.clone();
    let a_waits_z =
        tokio::spawn(async move { a3.acquire(&name("z"), Mode::Exclusive, None).await });
    until_waiting(&table, 3).await;
    assert!(
        table.snapshot(None).cycles.is_empty(),
        "converging waits are no cycle"
    );
    // c releases x: a gets it (first in line), so b's wait for x now waits
    // for a, who waits for z held by b: the grant closed a cycle whose
    // youngest wait is a's wait for z, which is ended.
    c.release(cx.id).expect("released");
    let ax = a_waits.await.expect("no panic").expect("a gets x");
    let refused = a_waits_z.await.expect("no panic");
    assert_eq!(refused, Err(BackendError::WouldDeadlock("z".into())));
    let cycle = &table.snapshot(None).cycles[0];
    assert_eq!(cycle.broken.as_deref(), Some("a"));
    a.release(ax.id).expect("released");
    b_waits_x.await.expect("no panic").expect("b gets x");
}

#[tokio::test]
async fn converging_and_shared_waits_are_never_flagged() {
    let (table, backend) = tracked();
    let h = backend.open_session("holder");
    let _hx = h.acquire(&name("x"), Mode::Shared, None).await.expect("x");
    let mut waits = Vec::new();
    for owner in ["a", "b", "c"] {
        let s: Arc<dyn LockSession> = Arc::from(backend.open_session(owner));
        // Each holds y shared, then waits for x exclusive.
        let _ = s
            .acquire(&name("y"), Mode::Shared, None)
            .await
            .expect("y shared");
        let w = s.clone();
        waits.push((
            s,
            tokio::spawn(async move { w.acquire(&name("x"), Mode::Exclusive, None).await }),
        ));
    }
    until_waiting(&table, 3).await;
    // The holder of x asks for y shared: shared/shared is no edge.
    let hy = h
        .acquire(&name("y"), Mode::Shared, None)
        .await
        .expect("y shared is granted");
    h.release(hy.id).expect("released");
    let snapshot = table.snapshot(None);
    assert!(snapshot.cycles.is_empty(), "{:?}", snapshot.cycles);
    assert_eq!(snapshot.cycles_found, 0);
    drop(h);
    for (s, wait) in waits {
        let grant = wait.await.expect("no panic").expect("granted in turn");
        s.release(grant.id).expect("released");
    }
}

#[tokio::test]
async fn ten_thousand_locks_are_listed_well_under_a_second() {
    let (table, backend) = tracked();
    let session = backend.open_session("many");
    for i in 0..10_000 {
        session
            .acquire(&name(&format!("lock-{i:05}")), Mode::Exclusive, None)
            .await
            .expect("granted");
    }
    let started = std::time::Instant::now();
    let snapshot = table.snapshot(None);
    let took = started.elapsed();
    assert_eq!(snapshot.locks.len(), 10_000);
    assert!(
        took < Duration::from_millis(500),
        "a snapshot of 10,000 locks took {took:?}"
    );
    assert_eq!(table.snapshot(Some("lock-09999")).locks.len(), 1);
    assert_eq!(table.snapshot(Some("lock-01")).locks.len(), 1000);
}
