//! The conformance suite's semaphore checks (issue 13): they hold on every
//! backend, ZooKeeper with host-local hand-off included (each permit has a
//! lease node of its own there).

use std::time::Duration;

use wardlock_backend::{BackendError, GrantStatus};

use super::skipped;
use crate::{Subject, TEST_WAIT_LIMIT, name};

/// At most `n` permits at once; the next waiter is granted a released or
/// dropped permit with a greater token; zero permits is a typed error.
pub(super) async fn semaphore_admits_its_permits(s: &Subject) {
    if !s.features.semaphores {
        return skipped("semaphore_admits_its_permits", "semaphores");
    }
    let sem = name("conf/sem");
    let a = s.backend.open_session("a");
    let b = s.backend.open_session("b");
    let c = s.backend.open_session("c");
    let zero = a
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 0, None)
        .await;
    assert!(
        matches!(&zero, Err(BackendError::InvalidRequest(why)) if why.contains('0')),
        "{zero:?}"
    );
    let pa = a
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 2, None)
        .await
        .expect("a's permit");
    let pb = b
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 2, None)
        .await
        .expect("b's permit");
    assert!(pb.token > pa.token, "tokens {} then {}", pa.token, pb.token);
    let downgrade = b.downgrade(pb.id).await;
    assert!(
        matches!(downgrade, Err(BackendError::InvalidRequest(_))),
        "{downgrade:?}"
    );
    assert_eq!(a.status(pa.id), GrantStatus::Held);
    assert_eq!(
        c.semaphores()
            .expect("semaphores")
            .try_acquire_permit(&sem, 2)
            .await
            .expect("try"),
        None
    );
    assert_eq!(
        c.semaphores()
            .expect("semaphores")
            .acquire_permit(&sem, 2, Some(Duration::from_millis(50)))
            .await,
        Err(BackendError::Timeout)
    );
    let released = a.status_changed(pa.id, GrantStatus::Held);
    a.release(pa.id).expect("release");
    assert_eq!(
        tokio::time::timeout(TEST_WAIT_LIMIT, released)
            .await
            .expect("the release wakes the subscriber"),
        GrantStatus::Released
    );
    let pc = c
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 2, Some(TEST_WAIT_LIMIT))
        .await
        .expect("c is granted a's permit");
    assert!(pc.token > pb.token, "tokens {} then {}", pb.token, pc.token);
    // Dropping a session returns its permit.
    drop(b);
    let pa2 = a
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 2, Some(TEST_WAIT_LIMIT))
        .await
        .expect("a is granted b's permit");
    assert!(pa2.token > pc.token);
    a.release(pa2.id).expect("release");
    c.release(pc.id).expect("release");
}

/// A timed-out and a dropped wait for a permit hold nothing afterwards: once
/// the holder releases, one session takes every permit.
pub(super) async fn semaphore_abandoned_waits_leave_nothing(s: &Subject) {
    if !s.features.semaphores {
        return skipped("semaphore_abandoned_waits_leave_nothing", "semaphores");
    }
    let sem = name("conf/sem-abandoned");
    let holder = s.backend.open_session("holder");
    let waiter = s.backend.open_session("waiter");
    let held = holder
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, None)
        .await
        .expect("permit");
    let timed_out = waiter
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, Some(Duration::from_millis(50)))
        .await;
    assert_eq!(timed_out, Err(BackendError::Timeout));
    // Dropped by the caller mid-wait (the outer timeout drops the future).
    let dropped = tokio::time::timeout(
        Duration::from_millis(100),
        waiter
            .semaphores()
            .expect("semaphores")
            .acquire_permit(&sem, 1, None),
    )
    .await;
    assert!(dropped.is_err(), "the permit is held: {dropped:?}");
    holder.release(held.id).expect("release");
    // A permit left behind by either wait would keep this one waiting.
    let next = waiter
        .semaphores()
        .expect("semaphores")
        .acquire_permit(&sem, 1, Some(TEST_WAIT_LIMIT))
        .await
        .expect("nothing holds the permit any more");
    assert!(next.token > held.token);
    waiter.release(next.id).expect("release");
}
