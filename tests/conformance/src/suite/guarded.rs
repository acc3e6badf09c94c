//! The conformance suite's check of the guarded store (issue 35): data that
//! belongs to a lock name, written only through an exclusive grant that
//! still stands. The loss of a grant on the engine (a paused host whose
//! session expired) needs each engine's own fault: wardlock's e2e tests make
//! it on ZooKeeper and etcd; here, everything an engine must do without one.

use wardlock_backend::guarded::MAX_VALUE_BYTES;
use wardlock_backend::name::LockName;
use wardlock_backend::{BackendError, GuardedKey, LockSession, Mode};

use super::skipped;
use crate::{Subject, TEST_WAIT_LIMIT, name};

/// Writes commit through an exclusive holder, carry its token and a rising
/// revision, list sorted by prefix, and delete to nothing; a shared holder,
/// a released grant and an oversize value are refused and change nothing;
/// the next holder reads what the last one wrote.
pub(super) async fn guarded_writes_need_a_standing_exclusive_grant(s: &Subject) {
    if !s.features.guarded {
        return skipped(
            "guarded_writes_need_a_standing_exclusive_grant",
            "guarded store",
        );
    }
    let lock = name("conf/guarded");
    let (k1, k2) = (key("orders/1"), key("orders/2"));
    let reader = s.backend.open_session("reader");
    assert_eq!(
        reader
            .guarded_store()
            .expect("guarded_store")
            .guarded_get(&lock, &k1)
            .await,
        Ok(None)
    );
    assert_eq!(keys(&*reader, &lock, "", 10).await, Vec::<String>::new());

    let a = s.backend.open_session("a");
    let held = a
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("a acquires");
    let first = a
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(held.id, &k1, b"one")
        .await
        .expect("put");
    let second = a
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(held.id, &k1, b"two")
        .await
        .expect("put again");
    assert!(second > first, "revisions {first} then {second}");
    a.guarded_store()
        .expect("guarded_store")
        .guarded_put(held.id, &k2, b"other")
        .await
        .expect("put k2");
    let entry = reader
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&lock, &k1)
        .await
        .expect("get")
        .expect("k1 is there");
    assert_eq!(
        (entry.value.as_slice(), entry.token, entry.revision),
        (&b"two"[..], held.token, second),
        "{entry:?}"
    );
    assert_eq!(
        keys(&*reader, &lock, "", 10).await,
        ["orders/1", "orders/2"]
    );
    assert_eq!(keys(&*reader, &lock, "orders/2", 10).await, ["orders/2"]);
    assert_eq!(keys(&*reader, &lock, "", 1).await, ["orders/1"]);
    let too_big = vec![0u8; MAX_VALUE_BYTES + 1];
    let refused = a
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(held.id, &k1, &too_big)
        .await;
    assert!(
        matches!(refused, Err(BackendError::LimitExceeded(_))),
        "{refused:?}"
    );
    a.release(held.id).expect("release a");
    let released = a
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(held.id, &k1, b"late")
        .await;
    assert!(
        matches!(released, Err(BackendError::UnknownGrant(_))),
        "{released:?}"
    );

    let shared = s.backend.open_session("shared");
    let read_grant = shared
        .acquire(&lock, Mode::Shared, Some(TEST_WAIT_LIMIT))
        .await
        .expect("shared acquires");
    let refused = shared
        .guarded_store()
        .expect("guarded_store")
        .guarded_put(read_grant.id, &k1, b"reader")
        .await;
    assert!(
        matches!(refused, Err(BackendError::InvalidRequest(_))),
        "{refused:?}"
    );
    shared.release(read_grant.id).expect("release shared");

    let b = s.backend.open_session("b");
    let next = b
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("b acquires");
    let entry = b
        .guarded_store()
        .expect("guarded_store")
        .guarded_get(&lock, &k1)
        .await
        .expect("get")
        .expect("k1");
    assert_eq!(
        entry.value, b"two",
        "nothing refused was written: {entry:?}"
    );
    assert!(
        next.token > entry.token,
        "b's token {} > the writer's {}",
        next.token,
        entry.token
    );
    assert_eq!(
        b.guarded_store()
            .expect("guarded_store")
            .guarded_delete(next.id, &k1)
            .await,
        Ok(true)
    );
    assert_eq!(
        b.guarded_store()
            .expect("guarded_store")
            .guarded_delete(next.id, &k1)
            .await,
        Ok(false)
    );
    assert_eq!(
        b.guarded_store()
            .expect("guarded_store")
            .guarded_get(&lock, &k1)
            .await,
        Ok(None)
    );
    assert_eq!(
        b.guarded_store()
            .expect("guarded_store")
            .guarded_delete(next.id, &k2)
            .await,
        Ok(true)
    );
    assert_eq!(keys(&*b, &lock, "", 10).await, Vec::<String>::new());
    b.release(next.id).expect("release b");
    s.wait_len("conf/guarded", 0).await;
}

fn key(key: &str) -> GuardedKey {
    GuardedKey::new(key).expect("a valid key")
}

async fn keys(session: &dyn LockSession, lock: &LockName, prefix: &str, limit: u32) -> Vec<String> {
    session
        .guarded_store()
        .expect("guarded_store")
        .guarded_keys(lock, prefix, limit)
        .await
        .expect("keys")
}
