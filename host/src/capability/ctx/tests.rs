//! Unit tests of [`super::WardlockCtx`] on the memory backend.

use super::*;
use crate::backend::memory::MemoryBackend;

/// A hang guard, never a synchronisation.
const LIMIT: Duration = Duration::from_secs(10);

fn ctx(backend: &MemoryBackend, owner: &str) -> WardlockCtx {
    WardlockCtx::new(backend, Arc::new(LockPolicy::new()), owner)
}

#[tokio::test]
async fn downgrade_lets_readers_in_and_keeps_writers_out() {
    let backend = MemoryBackend::new();
    let mut owner = ctx(&backend, "owner");
    let mut writer = ctx(&backend, "writer");
    let mut reader = ctx(&backend, "reader");
    let mut exclusive = owner.acquire("d", Mode::Exclusive, None).await.expect("x");
    // A writer queues behind the exclusive grant.
    let queued = writer.try_acquire("d", Mode::Exclusive).await.expect("try");
    assert!(queued.is_none());
    let shared = owner
        .acquire("d", Mode::Shared, None)
        .await
        .expect("downgrade");
    assert!(shared.fencing_token() > exclusive.fencing_token());
    owner.release(&mut exclusive).expect("release exclusive");
    let read = reader
        .try_acquire("d", Mode::Shared)
        .await
        .expect("try read");
    assert!(read.is_some(), "a reader joins the downgraded grant");
    let write = writer
        .try_acquire("d", Mode::Exclusive)
        .await
        .expect("try write");
    assert!(
        write.is_none(),
        "writers stay out while the shared grant lives"
    );
    assert!(matches!(
        owner.acquire("d", Mode::Exclusive, None).await,
        Err(LockError::WouldDeadlock(_))
    ));
}

#[tokio::test]
async fn release_all_makes_handles_report_released() {
    let backend = MemoryBackend::new();
    let mut owner = ctx(&backend, "owner");
    let mut handle = owner.acquire("r", Mode::Exclusive, None).await.expect("x");
    owner.release_all();
    assert_eq!(owner.status(&handle), GrantStatus::Released);
    assert_eq!(owner.release(&mut handle), Err(LockError::Released));
    let mut other = ctx(&backend, "other");
    assert!(
        other
            .try_acquire("r", Mode::Exclusive)
            .await
            .expect("try")
            .is_some()
    );
}

#[tokio::test]
async fn a_pending_lock_is_granted_in_the_background_and_taken_once() {
    let backend = MemoryBackend::new();
    let holder = backend.open_session("holder");
    let name = LockName::new("p").expect("name");
    let held = holder
        .acquire(&name, Mode::Exclusive, None)
        .await
        .expect("hold");
    let mut guest = ctx(&backend, "guest");
    let mut pending = guest
        .acquire_async("p", Mode::Exclusive, None)
        .await
        .expect("queued");
    assert!(guest.take_pending(&mut pending).is_none(), "still waiting");
    assert_eq!(
        guest.handles_in_use(),
        1,
        "a pending lock counts as a handle"
    );
    holder.release(held.id).expect("release");
    tokio::time::timeout(LIMIT, pending.until_finished())
        .await
        .expect("granted");
    let handle = guest
        .take_pending(&mut pending)
        .expect("finished")
        .expect("granted");
    assert_eq!(guest.status(&handle), GrantStatus::Held);
    assert_eq!(guest.handles_in_use(), 1);
    assert!(matches!(
        guest.take_pending(&mut pending),
        Some(Err(LockError::InvalidRequest(_)))
    ));
}

#[tokio::test]
async fn dropping_a_pending_lock_withdraws_its_wait() {
    let backend = MemoryBackend::new();
    let holder = backend.open_session("holder");
    let name = LockName::new("w").expect("name");
    let _held = holder
        .acquire(&name, Mode::Exclusive, None)
        .await
        .expect("hold");
    let mut guest = ctx(&backend, "guest");
    let pending = guest
        .acquire_async("w", Mode::Shared, None)
        .await
        .expect("queued");
    tokio::time::timeout(LIMIT, backend.wait_for(&name, |q| q.len() == 2))
        .await
        .expect("queued in the backend");
    guest.drop_pending(pending);
    assert_eq!(guest.handles_in_use(), 0);
    tokio::time::timeout(LIMIT, backend.wait_for(&name, |q| q.len() == 1))
        .await
        .expect("the wait is withdrawn");
}

#[tokio::test]
async fn a_subscribed_handle_learns_of_loss_and_release() {
    let backend = MemoryBackend::new();
    let mut guest = ctx(&backend, "guest#1");
    let mut lost = guest.acquire("s", Mode::Exclusive, None).await.expect("s");
    guest.subscribe(&mut lost);
    backend.inject("guest#", crate::backend::memory::Fault::Expire);
    tokio::time::timeout(LIMIT, lost.until_not_held())
        .await
        .expect("woken by the expiry");
    assert_eq!(guest.status(&lost), GrantStatus::Lost);
    // A fresh grant, released through its handle.
    let mut fresh = guest.acquire("u", Mode::Exclusive, None).await.expect("u");
    guest.subscribe(&mut fresh);
    guest.release(&mut fresh).expect("release");
    tokio::time::timeout(LIMIT, fresh.until_not_held())
        .await
        .expect("woken by the release");
}

#[tokio::test]
async fn pending_locks_count_against_the_handle_cap() {
    let backend = MemoryBackend::new();
    let holder = backend.open_session("holder");
    let _held = holder
        .acquire(&LockName::new("c").expect("name"), Mode::Exclusive, None)
        .await
        .expect("hold");
    let mut guest = WardlockCtx::new(
        &backend,
        Arc::new(LockPolicy::new().with_max_handles(1)),
        "guest",
    );
    let pending = guest
        .acquire_async("c", Mode::Exclusive, None)
        .await
        .expect("queued");
    assert!(matches!(
        guest.acquire_async("d", Mode::Exclusive, None).await,
        Err(LockError::LimitExceeded(_))
    ));
    assert!(matches!(
        guest.try_acquire("d", Mode::Exclusive).await,
        Err(LockError::LimitExceeded(_))
    ));
    guest.drop_pending(pending);
    assert!(
        guest
            .try_acquire("d", Mode::Exclusive)
            .await
            .expect("room again")
            .is_some()
    );
}

#[tokio::test]
async fn contenders_lists_the_queue_of_granted_names_only() {
    let backend = MemoryBackend::new();
    let mut holder = ctx(&backend, "holder");
    let held = holder
        .acquire("q/a", Mode::Exclusive, None)
        .await
        .expect("x");
    let policy = LockPolicy::new().grant("q").expect("prefix");
    let guest = WardlockCtx::new(&backend, Arc::new(policy), "guest");
    let queue = guest.contenders("q/a", 10).await.expect("listed");
    assert_eq!(queue.total, 1);
    assert_eq!(queue.listed[0].owner, "holder");
    assert_eq!(queue.listed[0].token, Some(held.fencing_token()));
    assert!(matches!(
        guest.contenders("other/a", 10).await,
        Err(LockError::Denied(_))
    ));
    assert!(matches!(
        guest.contenders("q/../a", 10).await,
        Err(LockError::InvalidName(_))
    ));
}
