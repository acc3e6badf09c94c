//! Semaphores on the memory backend: at most `n` holders, FIFO, cancel safe,
//! typed errors, faults.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::{Fault, MemoryBackend};
use crate::name::LockName;
use crate::{BackendError, GrantStatus, LockBackend, Mode};

/// Long enough to fail a hang, never a synchronisation.
const LIMIT: Duration = Duration::from_secs(10);

fn name(text: &str) -> LockName {
    LockName::new(text).expect("name")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn never_more_than_n_holders_under_contention() {
    const PERMITS: u32 = 3;
    let backend = MemoryBackend::new();
    let sem = name("pool");
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for s in 0..10 {
        let session = backend.open_session(&format!("s{s}"));
        let (sem, inside, most) = (sem.clone(), inside.clone(), most.clone());
        tasks.push(tokio::spawn(async move {
            let mut last_token = 0;
            for _ in 0..50 {
                let grant = session
                    .semaphores()
                    .expect("semaphores")
                    .acquire_permit(&sem, PERMITS, Some(LIMIT))
                    .await
                    .expect("permit");
                assert!(grant.token > last_token, "tokens grow per session");
                last_token = grant.token;
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::task::yield_now().await;
                inside.fetch_sub(1, Ordering::SeqCst);
                session.release(grant.id).expect("release");
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(LIMIT, task)
            .await
            .expect("in time")
            .expect("task");
    }
    let most = most.load(Ordering::SeqCst);
    assert!(most <= 3, "{most} holders at once");
    assert_eq!(backend.active_names(), 0, "nothing left queued");
}

#[tokio::test]
async fn waiters_are_granted_in_arrival_order_with_growing_tokens() {
    let backend = MemoryBackend::new();
    let sem = name("fifo");
    let first = backend.open_session("h0");
    let second = backend.open_session("h1");
    let a = first
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 2, None)
        .await
        .expect("a");
    let b = second
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 2, None)
        .await
        .expect("b");
    assert!(b.token > a.token);
    let mut waiters = Vec::new();
    for w in 0..3 {
        let session = backend.open_session(&format!("w{w}"));
        let sem2 = sem.clone();
        waiters.push(tokio::spawn(async move {
            let grant = session
                .semaphores()
                .expect("semaphores")
                .acquire_permit(&sem2, 2, Some(LIMIT))
                .await;
            (session, grant)
        }));
        backend.wait_for(&sem, |q| q.len() == 3 + w).await;
    }
    first.release(a.id).expect("release");
    let (w0, g0) = tokio::time::timeout(LIMIT, waiters.remove(0))
        .await
        .expect("the first waiter is granted first")
        .expect("task");
    let g0 = g0.expect("permit");
    assert!(g0.token > b.token);
    let queue = backend.snapshot(&sem);
    let owners: Vec<(&str, bool)> = queue
        .iter()
        .map(|e| (e.owner.as_str(), e.token.is_some()))
        .collect();
    assert_eq!(
        owners,
        vec![("h1", true), ("w0", true), ("w1", false), ("w2", false)]
    );
    w0.release(g0.id).expect("release");
    second.release(b.id).expect("release");
    for waiter in waiters {
        let (session, grant) = tokio::time::timeout(LIMIT, waiter)
            .await
            .expect("in time")
            .expect("task");
        session.release(grant.expect("permit").id).expect("release");
    }
    assert_eq!(backend.active_names(), 0);
}

#[tokio::test]
async fn timeout_and_cancel_leave_nothing_queued() {
    let backend = MemoryBackend::new();
    let sem = name("busy");
    let holder = backend.open_session("holder");
    let grant = holder
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, None)
        .await
        .expect("permit");
    let waiter = backend.open_session("waiter");
    let timed_out = waiter
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, Some(Duration::from_millis(20)))
        .await;
    assert_eq!(timed_out, Err(BackendError::Timeout));
    assert_eq!(
        backend.snapshot(&sem).len(),
        1,
        "the timed-out wait is gone"
    );
    assert_eq!(
        waiter
            .semaphores()
            .expect("semaphores")
            .try_acquire_permit(&sem, 1)
            .await
            .expect("try"),
        None
    );
    assert_eq!(backend.snapshot(&sem).len(), 1, "try left nothing queued");
    let sem2 = sem.clone();
    let cancelled = tokio::spawn(async move {
        waiter
            .semaphores()
            .expect("semaphores")
            .acquire_permit(&sem2, 1, None)
            .await
    });
    backend.wait_for(&sem, |q| q.len() == 2).await;
    cancelled.abort();
    backend.wait_for(&sem, |q| q.len() == 1).await;
    holder.release(grant.id).expect("release");
    assert_eq!(backend.active_names(), 0);
}

#[tokio::test]
async fn zero_and_mismatched_permits_are_typed_errors() {
    let backend = MemoryBackend::new();
    let session = backend.open_session("s");
    let sem = name("typed");
    let zero = session
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 0, None)
        .await;
    assert!(
        matches!(&zero, Err(BackendError::InvalidRequest(why)) if why.contains("0 permits")),
        "{zero:?}"
    );
    let zero = session
        .semaphores()
        .expect("semaphores")
        .try_acquire_permit(&sem, 0)
        .await;
    assert!(matches!(zero, Err(BackendError::InvalidRequest(_))));
    let grant = session
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 3, None)
        .await
        .expect("permit");
    let other = session
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 2, None)
        .await;
    assert!(
        matches!(&other, Err(BackendError::InvalidRequest(why)) if why.contains("3 permits") && why.contains("2 permits")),
        "{other:?}"
    );
    let lock = session.acquire(&sem, Mode::Exclusive, None).await;
    assert!(
        matches!(lock, Err(BackendError::InvalidRequest(_))),
        "{lock:?}"
    );
    let downgrade = session.downgrade(grant.id).await;
    assert!(matches!(downgrade, Err(BackendError::InvalidRequest(_))));
    let plain = name("plain");
    let held = session
        .acquire(&plain, Mode::Shared, None)
        .await
        .expect("lock");
    let permit = session
        .semaphores()
        .expect("semaphores")
        .try_acquire_permit(&plain, 1)
        .await;
    assert!(matches!(permit, Err(BackendError::InvalidRequest(_))));
    session.release(held.id).expect("release");
    session.release(grant.id).expect("release");
    assert_eq!(backend.active_names(), 0, "errors queued nothing");
    // Once nobody uses it, the name may come back with another count.
    let again = session
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 2, None)
        .await
        .expect("permit");
    session.release(again.id).expect("release");
}

#[tokio::test]
async fn an_injected_expiry_loses_the_permit_and_frees_it() {
    let backend = MemoryBackend::new();
    let sem = name("faulty");
    let holder = backend.open_session("plugin#0");
    let grant = holder
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, None)
        .await
        .expect("permit");
    let lost = holder.status_changed(grant.id, GrantStatus::Held);
    let waiter = backend.open_session("other#0");
    let sem2 = sem.clone();
    let waiting = tokio::spawn(async move {
        let grant = waiter
            .semaphores()
            .expect("semaphores")
            .acquire_permit(&sem2, 1, Some(LIMIT))
            .await;
        (waiter, grant)
    });
    backend.wait_for(&sem, |q| q.len() == 2).await;
    backend.inject("plugin#", Fault::Suspend);
    assert_eq!(holder.status(grant.id), GrantStatus::Suspended);
    backend.inject("plugin#", Fault::Expire);
    assert_eq!(
        tokio::time::timeout(LIMIT, lost).await.expect("woken"),
        GrantStatus::Lost
    );
    let (waiter, next) = tokio::time::timeout(LIMIT, waiting)
        .await
        .expect("the expired permit was freed")
        .expect("task");
    let next = next.expect("permit");
    assert!(next.token > grant.token);
    holder.release(grant.id).expect("release the lost permit");
    assert_eq!(waiter.status(next.id), GrantStatus::Held);
    drop(waiter);
    assert_eq!(
        backend.active_names(),
        0,
        "session drop released the permit"
    );
}
