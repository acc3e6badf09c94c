//! The conformance suite's check of `contenders` (issue 25): who holds a
//! lock and who waits, as a session sees it.

use wardlock_backend::name::LockName;
use wardlock_backend::{Contenders, LockSession, Mode};

use super::{queued, skipped};
use crate::{Subject, TEST_WAIT_LIMIT, name};

/// An unused lock has no contenders; a holder is listed first, with its mode,
/// then the waiters in arrival order; `limit` cuts the list but not the
/// total; the holder's service token never exceeds its guard's. With
/// host-local hand-off (one node or key per host) a host's waiters queue
/// inside the host, so the service lists its holder alone: the check
/// accepts 1 contender there, or all 3 with their owners. A semaphore's
/// permits are never listed.
pub(super) async fn contenders_list_holders_then_waiters(s: &Subject) {
    if !s.features.contenders {
        return skipped("contenders_list_holders_then_waiters", "list of contenders");
    }
    let lock = name("conf/contenders");
    let observer = s.backend.open_session("observer");
    assert_eq!(list(&*observer, &lock, 10).await, Contenders::default());

    let holder = s.backend.open_session("holder");
    let held = holder
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("holder acquires");
    let writer = queued(s, "writer", "conf/contenders", Mode::Exclusive, 2).await;
    let reader = queued(s, "reader", "conf/contenders", Mode::Shared, 3).await;

    let all = list(&*observer, &lock, 10).await;
    assert_eq!(all.listed.len(), all.total as usize, "{all:?}");
    let head = &all.listed[0];
    assert!(head.holds && head.mode == Mode::Exclusive, "{all:?}");
    if let Some(token) = head.token {
        assert!(
            token <= held.token,
            "service token {token} > guard's {}",
            held.token
        );
    }
    match all.total {
        1 => {}
        3 => {
            let shape: Vec<(bool, Mode)> = all.listed.iter().map(|c| (c.holds, c.mode)).collect();
            assert_eq!(
                shape,
                [
                    (true, Mode::Exclusive),
                    (false, Mode::Exclusive),
                    (false, Mode::Shared)
                ],
                "{all:?}"
            );
            for (contender, owner) in all.listed.iter().zip(["holder", "writer", "reader"]) {
                assert!(contender.owner.contains(owner), "{owner}: {all:?}");
                if !contender.holds {
                    assert_eq!(contender.token, None, "a waiter has no token: {all:?}");
                }
            }
        }
        other => panic!("1 or 3 contenders expected, {other} listed: {all:?}"),
    }
    let first = list(&*observer, &lock, 1).await;
    assert_eq!(first.total, all.total, "limit keeps the total: {first:?}");
    assert_eq!(first.listed.len(), 1, "limit cuts the list: {first:?}");
    assert!(first.listed[0].holds, "{first:?}");

    holder.release(held.id).expect("release holder");
    let (writer, granted) = writer.await.expect("writer task");
    let granted = granted.expect("writer granted");
    let next = list(&*observer, &lock, 10).await;
    assert!(
        next.listed[0].holds && next.listed[0].mode == Mode::Exclusive,
        "the writer holds: {next:?}"
    );
    writer.release(granted.id).expect("release writer");
    let (reader, granted) = reader.await.expect("reader task");
    reader
        .release(granted.expect("reader granted").id)
        .expect("release reader");
    s.wait_len("conf/contenders", 0).await;
    assert_eq!(list(&*observer, &lock, 10).await.total, 0, "all gone");

    if s.features.semaphores {
        // A semaphore's permits are not a lock's contenders: never listed.
        let sem = name("conf/contenders-sem");
        let permits = s.backend.open_session("permits");
        let permit = permits
            .semaphores()
            .expect("semaphores")
            .acquire_permit(&sem, 2, Some(TEST_WAIT_LIMIT))
            .await
            .expect("a permit");
        assert_eq!(
            list(&*observer, &sem, 10).await,
            Contenders::default(),
            "a semaphore's permit is listed as a contender"
        );
        permits.release(permit.id).expect("release the permit");
    }
}

/// `session`'s answer for `lock`, which must come.
async fn list(session: &dyn LockSession, lock: &LockName, limit: u32) -> Contenders {
    session
        .contention()
        .expect("contention")
        .contenders(lock, limit)
        .await
        .unwrap_or_else(|e| panic!("contenders of {lock}: {e}"))
}
