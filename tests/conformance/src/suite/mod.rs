//! The checks: one list, run against every engine, natively and (feature
//! `guests`) through guest components.

use std::time::Duration;

use wardlock_backend::{BackendError, Mode};

use crate::{Subject, TEST_WAIT_LIMIT, name, spawn_acquire};

mod contenders;
mod election;
mod guarded;
#[cfg(feature = "guests")]
mod guests;
#[cfg(feature = "guests")]
mod guests_v3;
mod keyvalue;
mod revocation;
mod semaphore;

use self::contenders::contenders_list_holders_then_waiters;
use self::election::elections_have_one_leader_at_a_time;
use self::guarded::guarded_writes_need_a_standing_exclusive_grant;
#[cfg(feature = "guests")]
use self::guests::{guest_counter_is_exact, guest_sees_wit_semantics, guest_trap_hands_over};
#[cfg(feature = "guests")]
use self::guests_v3::{
    guest_v3_cancelled_wait_leaves_nothing, guest_v3_counts_beside_v2, guest_v3_election,
    guest_v3_end_leaves_nothing, guest_v3_guarded_store, guest_v3_trap_leaves_nothing,
};
use self::keyvalue::key_value_writes_are_versioned_whole_and_fenced;
use self::revocation::revocation_reaches_every_holder;
use self::semaphore::{semaphore_abandoned_waits_leave_nothing, semaphore_admits_its_permits};

/// A session of `owner` waiting for `lock` in `mode`, in a task, returned
/// once the lock has `contenders` holders and waiters (this one included).
async fn queued(
    s: &Subject,
    owner: &str,
    lock: &str,
    mode: Mode,
    contenders: usize,
) -> tokio::task::JoinHandle<crate::Acquired> {
    let waiting = spawn_acquire(s.backend.open_session(owner), lock, mode);
    s.wait_len(lock, contenders).await;
    waiting
}

/// Says on stderr that `check` was skipped because the engine lacks `feature`.
fn skipped(check: &str, feature: &str) {
    eprintln!("conformance: {check}: skipped (the engine has no {feature})");
}

/// The one list of the conformance suite's checks, in the order
/// `conformance::all` runs them: calls `$then!(check, ...)` with every check's
/// name. Each check is a private `async fn(&Subject)` in the kit, so one
/// missing here is dead code (refused by `clippy -D warnings`);
/// [`checks`](crate::checks) has a public entry for each, and an engine's
/// suite can make a test of each from this list (wardlock's
/// `tests/e2e/conformance.rs` does).
///
/// With the `guests` feature (the default) the list includes the checks
/// through guest components (`guest_counter_is_exact`,
/// `guest_trap_hands_over`, `guest_sees_wit_semantics` and the WASI 0.3
/// guest's `guest_v3_*`); without it, they
/// are not in the list, nor in [`checks`](crate::checks).
#[cfg(feature = "guests")]
#[macro_export]
macro_rules! conformance_checks {
    ($then:ident) => {
        $then!(
            exclusive_excludes,
            shared_holders_overlap,
            grants_in_arrival_order,
            queued_writer_holds_back_readers,
            timeout_leaves_nothing_queued,
            cancelled_wait_leaves_nothing_queued,
            session_drop_releases_everything,
            tokens_increase_across_names_and_sessions,
            guest_counter_is_exact,
            guest_trap_hands_over,
            guest_sees_wit_semantics,
            guest_v3_counts_beside_v2,
            guest_v3_cancelled_wait_leaves_nothing,
            guest_v3_end_leaves_nothing,
            guest_v3_trap_leaves_nothing,
            guest_v3_guarded_store,
            guest_v3_election,
            status_subscriber_wakes_on_release,
            semaphore_admits_its_permits,
            semaphore_abandoned_waits_leave_nothing,
            revocation_reaches_every_holder,
            contenders_list_holders_then_waiters,
            guarded_writes_need_a_standing_exclusive_grant,
            key_value_writes_are_versioned_whole_and_fenced,
            elections_have_one_leader_at_a_time,
            missing_features_say_unsupported,
        );
    };
}

/// The one list of the conformance suite's checks, in the order
/// `conformance::all` runs them: calls `$then!(check, ...)` with every check's
/// name. Each check is a private `async fn(&Subject)` in the kit, so one
/// missing here is dead code (refused by `clippy -D warnings`);
/// [`checks`](crate::checks) has a public entry for each, and an engine's
/// suite can make a test of each from this list.
///
/// This kit was built without its `guests` feature: the list holds the
/// native checks alone (the guest checks need `wardlock-host` and wasmtime).
#[cfg(not(feature = "guests"))]
#[macro_export]
macro_rules! conformance_checks {
    ($then:ident) => {
        $then!(
            exclusive_excludes,
            shared_holders_overlap,
            grants_in_arrival_order,
            queued_writer_holds_back_readers,
            timeout_leaves_nothing_queued,
            cancelled_wait_leaves_nothing_queued,
            session_drop_releases_everything,
            tokens_increase_across_names_and_sessions,
            status_subscriber_wakes_on_release,
            semaphore_admits_its_permits,
            semaphore_abandoned_waits_leave_nothing,
            revocation_reaches_every_holder,
            contenders_list_holders_then_waiters,
            guarded_writes_need_a_standing_exclusive_grant,
            key_value_writes_are_versioned_whole_and_fenced,
            elections_have_one_leader_at_a_time,
            missing_features_say_unsupported,
        );
    };
}

macro_rules! suite {
    ($($check:ident),* $(,)?) => {
        /// Every check, in order; each names itself on stderr first so a failure
        /// is easy to place.
        /// Each is bounded by the subject's [`Subject::check_limit`].
        pub async fn all(subject: &Subject) {
            $(
                crate::bound::run_bounded(subject, stringify!($check), $check(subject)).await;
            )*
        }

        /// Each check on its own.
        pub mod checks {
            use crate::Subject;
            $(
                #[doc = concat!("The check `", stringify!($check), "` on `subject` (see its description in the kit's source, `suite/`).")]
                pub async fn $check(subject: &Subject) {
                    crate::bound::run_bounded(subject, stringify!($check), super::$check(subject)).await;
                }
            )*
        }
    };
}

conformance_checks!(suite);

/// One holder; everyone else waits or is refused.
async fn exclusive_excludes(s: &Subject) {
    let lock = name("conf/excl");
    let a = s.backend.open_session("a");
    let b = s.backend.open_session("b");
    s.waiting_for(format!("exclusive grant of {lock} to session `a`"));
    let held = a
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("a acquires");
    assert_eq!(
        b.try_acquire(&lock, Mode::Exclusive).await.expect("try"),
        None
    );
    assert_eq!(b.try_acquire(&lock, Mode::Shared).await.expect("try"), None);
    assert_eq!(
        b.acquire(&lock, Mode::Exclusive, Some(Duration::from_millis(50)))
            .await,
        Err(BackendError::Timeout)
    );
    a.release(held.id).expect("release");
    let next = b
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("b acquires");
    assert!(
        next.token > held.token,
        "tokens {} then {}",
        held.token,
        next.token
    );
    b.release(next.id).expect("release");
    s.wait_len("conf/excl", 0).await;
}

/// Readers share; a writer is refused while they hold.
async fn shared_holders_overlap(s: &Subject) {
    let lock = name("conf/shared");
    let a = s.backend.open_session("a");
    let b = s.backend.open_session("b");
    s.waiting_for(format!("shared grant of {lock} to session `a`"));
    let ra = a.acquire(&lock, Mode::Shared, None).await.expect("a reads");
    let rb = b
        .try_acquire(&lock, Mode::Shared)
        .await
        .expect("try")
        .expect("b reads too");
    let c = s.backend.open_session("c");
    assert_eq!(
        c.try_acquire(&lock, Mode::Exclusive).await.expect("try"),
        None
    );
    a.release(ra.id).expect("release");
    b.release(rb.id).expect("release");
    let w = c
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("writer after readers");
    c.release(w.id).expect("release");
    s.wait_len("conf/shared", 0).await;
}

/// Exclusive waiters are granted in arrival order.
async fn grants_in_arrival_order(s: &Subject) {
    let lock = name("conf/fifo");
    let holder = s.backend.open_session("holder");
    s.waiting_for(format!("exclusive grant of {lock} to session `holder`"));
    let held = holder
        .acquire(&lock, Mode::Exclusive, None)
        .await
        .expect("hold");
    let (order_tx, mut order_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut waiters = Vec::new();
    for i in 0..3 {
        let backend = s.backend.clone();
        let lock = lock.clone();
        let order_tx = order_tx.clone();
        waiters.push(tokio::spawn(async move {
            let session = backend.open_session(&format!("waiter-{i}"));
            let grant = session
                .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await
                .expect("waiter");
            order_tx.send((i, grant.token)).expect("report");
            session.release(grant.id).expect("release");
        }));
        s.wait_len("conf/fifo", 2 + i).await;
    }
    holder.release(held.id).expect("release");
    for waiter in waiters {
        waiter.await.expect("waiter task");
    }
    let order: Vec<(usize, u64)> = (0..3).filter_map(|_| order_rx.try_recv().ok()).collect();
    assert_eq!(
        order.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        vec![0, 1, 2],
        "{order:?}"
    );
    assert!(order.windows(2).all(|w| w[0].1 < w[1].1), "{order:?}");
    s.wait_len("conf/fifo", 0).await;
}

/// A queued writer keeps readers that arrive after it out.
async fn queued_writer_holds_back_readers(s: &Subject) {
    let lock = name("conf/writer-first");
    let reader = s.backend.open_session("reader");
    s.waiting_for(format!("shared grant of {lock} to session `reader`"));
    let read = reader
        .acquire(&lock, Mode::Shared, None)
        .await
        .expect("read");
    let writer = {
        let backend = s.backend.clone();
        let lock = lock.clone();
        tokio::spawn(async move {
            let session = backend.open_session("writer");
            let grant = session
                .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
                .await
                .expect("write");
            session.release(grant.id).expect("release");
            grant.token
        })
    };
    s.wait_len("conf/writer-first", 2).await;
    let late = s.backend.open_session("late reader");
    assert_eq!(
        late.try_acquire(&lock, Mode::Shared).await.expect("try"),
        None
    );
    reader.release(read.id).expect("release");
    let write_token = writer.await.expect("writer task");
    let late_read = late
        .acquire(&lock, Mode::Shared, Some(TEST_WAIT_LIMIT))
        .await
        .expect("late read");
    assert!(late_read.token > write_token);
    late.release(late_read.id).expect("release");
    s.wait_len("conf/writer-first", 0).await;
}

/// A timed-out wait is withdrawn.
async fn timeout_leaves_nothing_queued(s: &Subject) {
    let lock = name("conf/timeout");
    let a = s.backend.open_session("a");
    s.waiting_for(format!("exclusive grant of {lock} to session `a`"));
    let held = a.acquire(&lock, Mode::Exclusive, None).await.expect("hold");
    let b = s.backend.open_session("b");
    for mode in [Mode::Exclusive, Mode::Shared] {
        assert_eq!(
            b.acquire(&lock, mode, Some(Duration::from_millis(30)))
                .await,
            Err(BackendError::Timeout)
        );
    }
    s.wait_len("conf/timeout", 1).await;
    a.release(held.id).expect("release");
    s.wait_len("conf/timeout", 0).await;
}

/// Dropping a waiting acquire future withdraws the wait.
async fn cancelled_wait_leaves_nothing_queued(s: &Subject) {
    let lock = name("conf/cancel");
    let a = s.backend.open_session("a");
    s.waiting_for(format!("exclusive grant of {lock} to session `a`"));
    let held = a.acquire(&lock, Mode::Exclusive, None).await.expect("hold");
    let waiter = {
        let backend = s.backend.clone();
        let lock = lock.clone();
        tokio::spawn(async move {
            let session = backend.open_session("cancelled");
            let _ = session.acquire(&lock, Mode::Exclusive, None).await;
        })
    };
    s.wait_len("conf/cancel", 2).await;
    waiter.abort();
    assert!(waiter.await.expect_err("aborted").is_cancelled());
    s.wait_len("conf/cancel", 1).await;
    a.release(held.id).expect("release");
    s.wait_len("conf/cancel", 0).await;
}

/// Dropping a session releases all its grants.
async fn session_drop_releases_everything(s: &Subject) {
    let a = s.backend.open_session("a");
    a.acquire(&name("conf/drop-1"), Mode::Exclusive, None)
        .await
        .expect("hold 1");
    a.acquire(&name("conf/drop-2"), Mode::Shared, None)
        .await
        .expect("hold 2");
    drop(a);
    s.wait_len("conf/drop-1", 0).await;
    s.wait_len("conf/drop-2", 0).await;
    let b = s.backend.open_session("b");
    let grant = b
        .try_acquire(&name("conf/drop-1"), Mode::Exclusive)
        .await
        .expect("try");
    assert!(grant.is_some());
}

/// Tokens grow across names and sessions.
async fn tokens_increase_across_names_and_sessions(s: &Subject) {
    let mut last = 0;
    for round in 0..3 {
        for lock in ["conf/tok-a", "conf/tok-b"] {
            let session = s.backend.open_session(&format!("round {round}"));
            s.waiting_for(format!(
                "exclusive grant of {lock} to session `round {round}`"
            ));
            let grant = session
                .acquire(&name(lock), Mode::Exclusive, None)
                .await
                .expect("acquire");
            assert!(grant.token > last, "token {} after {last}", grant.token);
            last = grant.token;
        }
    }
}

/// `status_changed` (what a guest's `lock.subscribe` waits on) stays pending
/// while the grant is held — for an exclusive and a shared grant — and wakes
/// with `released` when it goes; a grant the session does not hold answers
/// `released` at once.
async fn status_subscriber_wakes_on_release(s: &Subject) {
    use std::task::{Context, Waker};
    use wardlock_backend::GrantStatus;

    let session = s.backend.open_session("subscriber");
    for (mode, lock) in [
        (Mode::Exclusive, name("conf/subscribe-x")),
        (Mode::Shared, name("conf/subscribe-s")),
    ] {
        let grant = session
            .acquire(&lock, mode, Some(TEST_WAIT_LIMIT))
            .await
            .expect("acquire");
        let mut changed = session.status_changed(grant.id, GrantStatus::Held);
        // In a block of its own: a `Context` is not `Send`, and the check's
        // future stays `Send` (a suite may spawn it).
        {
            let mut cx = Context::from_waker(Waker::noop());
            assert!(
                changed.as_mut().poll(&mut cx).is_pending(),
                "{mode}: a held grant's subscriber resolved at once"
            );
        }
        session.release(grant.id).expect("release");
        let woke = tokio::time::timeout(TEST_WAIT_LIMIT, changed)
            .await
            .expect("the release wakes the subscriber");
        assert_eq!(woke, GrantStatus::Released, "{mode}");
        let after = tokio::time::timeout(
            TEST_WAIT_LIMIT,
            session.status_changed(grant.id, GrantStatus::Held),
        )
        .await
        .expect("resolves at once");
        assert_eq!(after, GrantStatus::Released, "{mode}");
    }
}

/// An engine without semaphores, revocation, contenders, a guarded store,
/// a key-value store, election or downgrade says so with `Unsupported` (which guests see as
/// `unsupported`), and holds nothing afterwards; one with all of them has
/// nothing to show here.
async fn missing_features_say_unsupported(s: &Subject) {
    let lock = name("conf/unsupported");
    let session = s.backend.open_session("features");
    let unsupported = |answer: Option<BackendError>, what: &str| {
        assert!(
            matches!(answer, Some(BackendError::Unsupported(_))),
            "{what}: {answer:?}"
        );
    };
    if !s.features.semaphores {
        unsupported(session.semaphores().err(), "semaphores");
    }
    if !s.features.revocation {
        unsupported(session.revocation().err(), "revocation");
    }
    if !s.features.contenders {
        unsupported(session.contention().err(), "contenders");
    }
    if !s.features.guarded {
        unsupported(session.guarded_store().err(), "guarded store");
    }
    if !s.features.elections {
        unsupported(session.election().err(), "election");
    }
    if !s.features.key_value {
        unsupported(session.key_value().err(), "key-value store");
    }
    if !s.downgrades().await {
        let held = session
            .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
            .await
            .expect("exclusive");
        let downgraded = session.downgrade(held.id).await;
        assert!(
            matches!(downgraded, Err(BackendError::Unsupported(_))),
            "{downgraded:?}"
        );
        session.release(held.id).expect("release");
    }
    s.wait_len("conf/unsupported", 0).await;
}
