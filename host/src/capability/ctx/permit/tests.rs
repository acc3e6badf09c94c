//! Unit tests of [`WardlockCtx`]'s semaphore permits on the memory backend.

use std::sync::Arc;
use std::time::Duration;

use super::super::{GrantStatus, LockError, WardlockCtx};
use crate::backend::Mode;
use crate::backend::memory::{Fault, MemoryBackend};
use crate::policy::LockPolicy;

/// A hang guard, never a synchronisation.
const LIMIT: Duration = Duration::from_secs(10);

fn ctx(backend: &MemoryBackend, owner: &str, policy: LockPolicy) -> WardlockCtx {
    WardlockCtx::new(backend, Arc::new(policy), owner)
}

#[tokio::test]
async fn permits_are_counted_released_once_and_freed_with_the_instance() {
    let backend = MemoryBackend::new();
    let mut a = ctx(&backend, "a", LockPolicy::new());
    let mut b = ctx(&backend, "b", LockPolicy::new());
    let mut first = a.acquire_permit("pool", 2, None).await.expect("first");
    let second = a.try_acquire_permit("pool", 2).await.expect("try");
    let second = second.expect("a second permit is free");
    assert!(second.fencing_token() > first.fencing_token());
    assert!(
        b.try_acquire_permit("pool", 2)
            .await
            .expect("try")
            .is_none()
    );
    assert_eq!(a.permit_status(&first), GrantStatus::Held);
    assert_eq!(a.release_permit(&mut first), Ok(()));
    assert_eq!(a.release_permit(&mut first), Err(LockError::Released));
    assert_eq!(a.permit_status(&first), GrantStatus::Released);
    let taken = b.try_acquire_permit("pool", 2).await.expect("try");
    assert!(taken.is_some(), "the released permit is free again");
    // The instance's end frees the permit it still holds.
    drop(a);
    drop(second);
    let freed = b.try_acquire_permit("pool", 2).await.expect("try");
    assert!(freed.is_some(), "the dropped instance's permit is free");
}

#[tokio::test]
async fn bad_permit_requests_are_typed_errors() {
    let backend = MemoryBackend::new();
    let policy = LockPolicy::new().grant("ok").expect("grant");
    let mut guest = ctx(&backend, "guest", policy);
    let zero = guest.acquire_permit("ok/zero", 0, None).await;
    assert!(
        matches!(&zero, Err(LockError::InvalidRequest(why)) if why.contains("0 permits")),
        "{zero:?}"
    );
    let denied = guest.acquire_permit("other", 1, None).await;
    assert!(matches!(denied, Err(LockError::Denied(_))), "{denied:?}");
    let bad = guest.try_acquire_permit("ok/../x", 1).await;
    assert!(matches!(bad, Err(LockError::InvalidName(_))), "{bad:?}");
    let _three = guest.acquire_permit("ok/sem", 3, None).await.expect("3");
    let mismatch = guest.acquire_permit("ok/sem", 2, None).await;
    assert!(
        matches!(&mismatch, Err(LockError::InvalidRequest(why)) if why.contains("3 permits")),
        "{mismatch:?}"
    );
    let _lock = guest.acquire("ok/lock", Mode::Exclusive, None).await;
    let as_lock = guest.try_acquire_permit("ok/lock", 1).await;
    assert!(
        matches!(&as_lock, Err(LockError::InvalidRequest(why)) if why.contains("a lock")),
        "{as_lock:?}"
    );
    let as_sem = guest.try_acquire("ok/sem", Mode::Shared).await;
    assert!(
        matches!(as_sem, Err(LockError::InvalidRequest(_))),
        "{as_sem:?}"
    );
    // A timed-out permit wait is a plain timeout.
    let _taken = guest.acquire_permit("ok/one", 1, None).await.expect("one");
    let waited = guest
        .acquire_permit("ok/one", 1, Some(Duration::from_millis(20)))
        .await;
    assert!(matches!(waited, Err(LockError::Timeout)), "{waited:?}");
}

#[tokio::test]
async fn permits_count_against_the_handle_cap() {
    let backend = MemoryBackend::new();
    let mut guest = ctx(&backend, "guest", LockPolicy::new().with_max_handles(2));
    let _lock = guest
        .acquire("l", Mode::Exclusive, None)
        .await
        .expect("lock");
    let permit = guest.acquire_permit("p", 5, None).await.expect("permit");
    let over = guest.acquire_permit("p", 5, None).await;
    assert!(matches!(over, Err(LockError::LimitExceeded(_))), "{over:?}");
    let over = guest.try_acquire("m", Mode::Exclusive).await;
    assert!(matches!(over, Err(LockError::LimitExceeded(_))), "{over:?}");
    guest.drop_permit(permit);
    assert!(
        guest
            .try_acquire_permit("p", 5)
            .await
            .expect("room")
            .is_some()
    );
}

#[tokio::test]
async fn a_subscribed_permit_learns_of_loss_and_release_all() {
    let backend = MemoryBackend::new();
    let mut guest = ctx(&backend, "guest#1", LockPolicy::new());
    let mut lost = guest.acquire_permit("s", 2, None).await.expect("s");
    guest.subscribe_permit(&mut lost);
    assert_eq!(backend.inject("guest#", Fault::Expire), 1);
    tokio::time::timeout(LIMIT, lost.until_not_held())
        .await
        .expect("woken by the expiry");
    assert_eq!(guest.permit_status(&lost), GrantStatus::Lost);
    assert_eq!(guest.release_permit(&mut lost), Err(LockError::Lost));
    // A fresh permit, ended by the host: it reports `released`.
    let mut fresh = guest.acquire_permit("u", 1, None).await.expect("u");
    guest.subscribe_permit(&mut fresh);
    guest.release_all();
    tokio::time::timeout(LIMIT, fresh.until_not_held())
        .await
        .expect("woken by the release");
    assert_eq!(guest.permit_status(&fresh), GrantStatus::Released);
    assert_eq!(guest.release_permit(&mut fresh), Err(LockError::Released));
}
