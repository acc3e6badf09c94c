//! Unit tests of `acquire_many`: canonical order, input errors, rollback.

use std::sync::Arc;
use std::time::Duration;

use super::super::WardlockCtx;
use crate::backend::memory::MemoryBackend;
use crate::backend::{LockBackend, Mode};
use crate::capability::LockError;
use crate::name::LockName;
use crate::policy::LockPolicy;

/// A hang guard, never a synchronisation.
const LIMIT: Duration = Duration::from_secs(20);

fn ctx(backend: &MemoryBackend, owner: &str) -> WardlockCtx {
    WardlockCtx::new(backend, Arc::new(LockPolicy::new()), owner)
}

fn requests(names: &[&str], mode: Mode) -> Vec<(String, Mode)> {
    names.iter().map(|n| (n.to_string(), mode)).collect()
}

fn name(s: &str) -> LockName {
    LockName::new(s).expect("valid name")
}

#[test]
fn plan_is_sorted_by_name_and_keeps_each_index() {
    let backend = MemoryBackend::new();
    let ctx = ctx(&backend, "p");
    let plan = ctx
        .plan_many(&requests(&["c", "a", "b/x"], Mode::Exclusive))
        .expect("valid");
    let order: Vec<(&str, usize)> = plan.iter().map(|p| (p.name.as_str(), p.index)).collect();
    assert_eq!(order, [("a", 1), ("b/x", 2), ("c", 0)]);
}

#[test]
fn bad_requests_are_typed_errors() {
    let backend = MemoryBackend::new();
    let ctx = ctx(&backend, "p");
    match ctx.plan_many(&[]) {
        Err(LockError::InvalidRequest(why)) => assert!(why.contains("at least one"), "{why}"),
        other => panic!("empty list: {other:?}"),
    }
    let twice = vec![
        ("a".to_string(), Mode::Exclusive),
        ("b".to_string(), Mode::Shared),
        ("a".to_string(), Mode::Shared),
    ];
    match ctx.plan_many(&twice) {
        Err(LockError::InvalidRequest(why)) => {
            assert!(why.contains("\"a\" is listed twice (at 0 and 2)"), "{why}");
        }
        other => panic!("duplicate: {other:?}"),
    }
    assert!(matches!(
        ctx.plan_many(&requests(&["ok", "../x"], Mode::Exclusive)),
        Err(LockError::InvalidName(_))
    ));
    let capped = WardlockCtx::new(
        &backend,
        Arc::new(LockPolicy::new().with_max_handles(2)),
        "capped",
    );
    assert!(matches!(
        capped.plan_many(&requests(&["a", "b", "c"], Mode::Exclusive)),
        Err(LockError::LimitExceeded(_))
    ));
}

#[tokio::test]
async fn a_timeout_releases_what_was_taken_and_leaves_nothing_queued() {
    let backend = MemoryBackend::new();
    let blocker = backend.open_session("blocker");
    let held = blocker
        .acquire(&name("b"), Mode::Exclusive, None)
        .await
        .expect("b");
    let mut guest = ctx(&backend, "guest");
    let result = guest
        .acquire_many(
            &requests(&["c", "b", "a"], Mode::Exclusive),
            Some(Duration::from_millis(50)),
        )
        .await;
    assert!(matches!(result, Err(LockError::Timeout)), "{result:?}");
    assert!(backend.snapshot(&name("a")).is_empty(), "a released");
    assert!(backend.snapshot(&name("c")).is_empty(), "c never taken");
    let b = backend.snapshot(&name("b"));
    assert_eq!(b.len(), 1, "only the blocker, no waiter left: {b:?}");
    assert_eq!(b[0].owner, "blocker");
    assert_eq!(guest.handles_in_use(), 0);
    // Once b is free the same request succeeds, in the guest's order.
    blocker.release(held.id).expect("release b");
    let handles = guest
        .acquire_many(&requests(&["c", "b", "a"], Mode::Exclusive), Some(LIMIT))
        .await
        .expect("all three");
    let names: Vec<&str> = handles.iter().map(|h| h.name().as_str()).collect();
    assert_eq!(names, ["c", "b", "a"]);
}

#[tokio::test]
async fn a_dropped_request_releases_what_was_taken() {
    let backend = MemoryBackend::new();
    let blocker = backend.open_session("blocker");
    let _held = blocker
        .acquire(&name("b"), Mode::Exclusive, None)
        .await
        .expect("b");
    let mut guest = ctx(&backend, "guest");
    {
        let request = requests(&["a", "b"], Mode::Exclusive);
        let wait = guest.acquire_many(&request, None);
        tokio::pin!(wait);
        // Runs until it waits for b, holding a.
        assert!(futures_poll_once(wait.as_mut()).is_none());
        assert_eq!(backend.snapshot(&name("a")).len(), 1, "a taken");
        assert_eq!(backend.snapshot(&name("b")).len(), 2, "waiting for b");
    }
    assert!(backend.snapshot(&name("a")).is_empty(), "a released");
    assert_eq!(backend.snapshot(&name("b")).len(), 1, "the wait withdrawn");
    assert_eq!(guest.handles_in_use(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opposite_orders_never_deadlock() {
    let backend = MemoryBackend::new();
    let run = |names: [&'static str; 3], owner: &'static str| {
        let mut ctx = ctx(&backend, owner);
        let backend = backend.clone();
        tokio::spawn(async move {
            for _ in 0..200 {
                let mut handles = ctx
                    .acquire_many(&requests(&names, Mode::Exclusive), None)
                    .await
                    .expect("granted");
                for lock in ["a", "b", "c"] {
                    let queue = backend.snapshot(&name(lock));
                    assert_eq!(queue[0].owner, owner, "exclusion: {lock} is ours");
                }
                for handle in &mut handles {
                    ctx.release(handle).expect("release");
                }
                for handle in handles {
                    ctx.drop_handle(handle);
                }
            }
        })
    };
    let one = run(["a", "b", "c"], "one");
    let two = run(["c", "b", "a"], "two");
    tokio::time::timeout(LIMIT, async {
        one.await.expect("one");
        two.await.expect("two");
    })
    .await
    .expect("both finish: no deadlock");
    assert_eq!(backend.active_names(), 0);
}

/// Polls `future` once, without waiting.
fn futures_poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Option<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.poll(&mut cx) {
        std::task::Poll::Ready(out) => Some(out),
        std::task::Poll::Pending => None,
    }
}
