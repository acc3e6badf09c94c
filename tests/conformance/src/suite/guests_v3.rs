//! The checks through a WASI 0.3 guest (`lockctl3`, on
//! `wardlock:lock@0.3.0`): its awaited locks exclude a 0.2.2 guest's, a
//! wait it cancels leaves nothing on the engine, and its end (the
//! deadline, a trap) while calls wait and locks are held leaves nothing either;
//! 0.3.0's guarded store and election, call by call.

use std::time::Duration;

use wardlock_backend::Mode;
use wardlock_host::runner::Outcome;

use super::skipped;
use crate::{KitGuest, Subject, TEST_WAIT_LIMIT, assert_success, lines, name, spawn_run};

/// Four 0.3 guests and four 0.2.2 guests (`counter`) on one lock lose no
/// update: the two versions exclude each other.
pub(super) async fn guest_v3_counts_beside_v2(s: &Subject) {
    let dir = tempfile::tempdir().expect("temp dir");
    let v3 = KitGuest::Lockctl3.runner(s.backend.clone(), Some(dir.path()), Some(TEST_WAIT_LIMIT));
    let v2 = KitGuest::Counter.runner(s.backend.clone(), Some(dir.path()), Some(TEST_WAIT_LIMIT));
    let mut tasks = Vec::new();
    for i in 0..4 {
        tasks.push(spawn_run(
            &v3,
            i,
            &["counter", "conf/v3-count", "20", "/data/count"],
        ));
        tasks.push(spawn_run(&v2, i, &["conf/v3-count", "20", "/data/count"]));
    }
    for task in tasks {
        assert_success(&task.await.expect("guest task"));
    }
    let count = std::fs::read_to_string(dir.path().join("count")).expect("count file");
    assert_eq!(count.trim(), "160");
    s.wait_len("conf/v3-count", 0).await;
}

/// A 0.3 guest awaits a held lock and a free one at once and drops the
/// first wait once it has the second: the engine is left with the native
/// holder alone, and once that releases, a native waiter that queued
/// behind the cancelled wait is granted (its place was given up).
pub(super) async fn guest_v3_cancelled_wait_leaves_nothing(s: &Subject) {
    let holder = s.backend.open_session("holder");
    let held = holder
        .acquire(&name("conf/v3-wanted"), Mode::Exclusive, None)
        .await
        .expect("holder");
    let runner = KitGuest::Lockctl3.runner(s.backend.clone(), None, Some(TEST_WAIT_LIMIT));
    let report = spawn_run(&runner, 0, &["cancel", "conf/v3-wanted", "conf/v3-free"])
        .await
        .expect("guest task");
    assert_success(&report);
    let out = lines(&report);
    assert_eq!(out.len(), 1, "{out:?}");
    // The guest's `contenders` call, right after: an engine without
    // contention listing answers `invalid-request`, which is no failure.
    assert!(
        out[0].starts_with("cancel: conf/v3-free first; conf/v3-wanted has 1 holders and ")
            || out[0].starts_with("cancel: conf/v3-free first; conf/v3-wanted's contenders: "),
        "{out:?}"
    );
    // Whether the engine had withdrawn the wait by the time the guest's
    // next call read the queue depends on the engine (memory: at once;
    // ZooKeeper, etcd: one more round trip): said, not asserted.
    eprintln!("conformance: guest_v3_cancelled_wait_leaves_nothing: the guest read {out:?}");
    s.wait_len("conf/v3-wanted", 1).await;
    s.wait_len("conf/v3-free", 0).await;
    let waiter = super::queued(s, "waiter", "conf/v3-wanted", Mode::Exclusive, 2).await;
    holder.release(held.id).expect("release");
    let (_session, grant) = waiter.await.expect("waiter task");
    assert!(grant.is_ok(), "{grant:?}");
}

/// A 0.3 guest holding 5 locks, with 5 calls waiting on each of two held
/// locks, is stopped by its deadline: all of it is withdrawn and released.
pub(super) async fn guest_v3_end_leaves_nothing(s: &Subject) {
    let holder = s.backend.open_session("holder");
    let mut held = Vec::new();
    for lock in ["conf/v3-end-a", "conf/v3-end-b"] {
        held.push(
            holder
                .acquire(&name(lock), Mode::Exclusive, None)
                .await
                .expect("holder"),
        );
    }
    let deadline = Duration::from_secs(2);
    let runner = KitGuest::Lockctl3.runner(s.backend.clone(), None, Some(deadline));
    let args = ["pending-end", "5", "5", "conf/v3-end-a", "conf/v3-end-b"];
    let report = spawn_run(&runner, 0, &args).await.expect("guest task");
    crate::assert_outcome!(report, Outcome::TimedOut(_));
    assert_eq!(lines(&report), ["waiting: 5 held, 10 pending"]);
    for lock in ["conf/v3-end-a", "conf/v3-end-b"] {
        s.wait_len(lock, 1).await;
    }
    for i in 0..5 {
        s.wait_len(&format!("conf/v3-end-a-held/l{i}"), 0).await;
    }
    for grant in held {
        holder.release(grant.id).expect("release");
    }
}

/// A 0.3 guest that traps with a call waiting (on a lock held natively) and
/// a lock held: its wait is withdrawn and its lock released, so only the
/// native holder is left; once that releases, the lock is free.
pub(super) async fn guest_v3_trap_leaves_nothing(s: &Subject) {
    let holder = s.backend.open_session("holder");
    let held = holder
        .acquire(&name("conf/v3-trap"), Mode::Exclusive, None)
        .await
        .expect("holder");
    let runner = KitGuest::Lockctl3.runner(s.backend.clone(), None, Some(TEST_WAIT_LIMIT));
    let report = spawn_run(&runner, 0, &["trap-pending", "conf/v3-trap"])
        .await
        .expect("guest task");
    crate::assert_outcome!(report, Outcome::Trap(_));
    let out = lines(&report);
    assert!(
        out.len() == 1 && out[0].starts_with("trapping: holding token"),
        "{out:?}"
    );
    s.wait_len("conf/v3-trap", 1).await;
    s.wait_len("conf/v3-trap-held", 0).await;
    holder.release(held.id).expect("release");
    s.wait_len("conf/v3-trap", 0).await;
}

/// The number after `prefix` in a guest's line.
fn number_after(line: &str, prefix: &str) -> u64 {
    line.strip_prefix(prefix)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {prefix:?} in {line:?}"))
}

/// Every call of 0.3.0's `guarded` store through a 0.3 guest: a holder
/// writes (a revision), reads back its value and token, lists and deletes
/// (true, then false); a shared holder may not write; a released handle
/// writes nothing.
pub(super) async fn guest_v3_guarded_store(s: &Subject) {
    if !s.features.guarded {
        return skipped("guest_v3_guarded_store", "guarded store");
    }
    let runner = KitGuest::Lockctl3.runner(s.backend.clone(), None, Some(TEST_WAIT_LIMIT));
    let report = spawn_run(&runner, 0, &["store", "conf/v3-store"])
        .await
        .expect("guest task");
    assert_success(&report);
    let out = lines(&report);
    assert_eq!(out.len(), 8, "{out:?}");
    assert!(number_after(&out[0], "put: rev=") > 0, "{out:?}");
    assert!(out[1].starts_with("get: v1 token="), "{out:?}");
    assert_eq!(out[2], "keys: k1");
    assert!(
        out[3].starts_with("shared put: Error::InvalidRequest"),
        "a shared holder may not write: {out:?}"
    );
    assert_eq!(
        out[4..8],
        [
            "delete: true",
            "delete again: false",
            "get after delete: none",
            "put after release: Error::Released"
        ]
    );
    s.wait_len("conf/v3-store", 0).await;
}

/// The whole of 0.3.0's `election` through a 0.3 guest: the `observe`
/// stream reports nobody, the guest as leader, its proclaimed value, and
/// nobody again after it resigns; the leader writes the election's store;
/// a second campaign times out; resigning completes the leadership's
/// `not-held` future with `released`, and a second resignation is refused.
pub(super) async fn guest_v3_election(s: &Subject) {
    if !s.features.elections {
        return skipped("guest_v3_election", "leader election");
    }
    let runner = KitGuest::Lockctl3.runner(s.backend.clone(), None, Some(TEST_WAIT_LIMIT));
    let report = spawn_run(&runner, 0, &["elect", "conf/v3-elect"])
        .await
        .expect("guest task");
    assert_success(&report);
    let out = lines(&report);
    assert_eq!(out.len(), 14, "{out:?}");
    assert_eq!(out[..2], ["leader: none", "observed: none"]);
    let term = number_after(&out[2], "leads term=");
    assert_eq!(out[3], format!("observed: alpha term={term}"));
    assert_eq!(out[4], "proclaim: ok");
    assert_eq!(out[5], format!("observed: alpha-2 term={term}"));
    if s.features.guarded {
        assert!(number_after(&out[6], "put: rev=") > 0, "{out:?}");
    }
    assert_eq!(out[7], "second: Error::Timeout");
    assert_eq!(
        out[8..13],
        [
            "resign: ok",
            "not-held: Status::Released",
            "resign again: Error::Released",
            "observed: none",
            "leader: none"
        ]
    );
    assert!(
        out[13].starts_with("bad name: Error::InvalidName"),
        "{out:?}"
    );
    if s.features.guarded {
        // A last leader clears the store: the engine is left as found.
        let last = s.backend.open_session("last");
        let election = last.election().expect("election");
        let lead = election
            .campaign(&name("conf/v3-elect"), "omega", Some(TEST_WAIT_LIMIT))
            .await
            .expect("a last leader");
        let store = last.guarded_store().expect("guarded_store");
        let key = wardlock_backend::GuardedKey::new("epoch").expect("key");
        assert_eq!(store.guarded_delete(lead.id, &key).await, Ok(true));
        last.release(lead.id).expect("resign");
    }
}
