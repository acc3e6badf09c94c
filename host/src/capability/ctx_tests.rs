//! Unit tests of [`super::WardlockCtx`] on the memory backend.

use super::*;
use crate::backend::memory::MemoryBackend;

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
