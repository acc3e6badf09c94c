//! The conformance suite's check of the key-value store (what the host
//! serves as `wasi:keyvalue`): versioned entries, batches that commit whole
//! or not at all, and writes fenced by exclusive grants of the writing
//! session. The loss of a grant on the engine needs each engine's own fault:
//! wardlock's e2e tests make it on ZooKeeper, etcd and PostgreSQL; here,
//! everything an engine must do without one.

use wardlock_backend::keyvalue::{
    Bucket, Expect, KvCommit, KvKey, KvWrite, MAX_BATCH_KEYS, MAX_VALUE_BYTES,
};
use wardlock_backend::{BackendError, KeyValue, Mode};

use super::skipped;
use crate::{Subject, TEST_WAIT_LIMIT, name};

fn key(text: &str) -> KvKey {
    KvKey::new(text).expect("valid key")
}

fn put(text: &str, value: &[u8]) -> KvWrite {
    KvWrite::put(key(text), value.to_vec())
}

/// Empties `bucket` (a server may keep entries of an earlier run).
async fn emptied(store: &dyn KeyValue, bucket: &Bucket) {
    let keys = store.kv_keys(bucket, 0, 1000).await.expect("keys");
    for chunk in keys.chunks(MAX_BATCH_KEYS) {
        let deletes: Vec<KvWrite> = chunk.iter().map(|k| KvWrite::delete(key(k))).collect();
        let emptied = store.kv_write(bucket, &deletes, &[]).await;
        assert_eq!(emptied, Ok(KvCommit::Committed));
    }
}

/// Plain writes read back with a version that changes on every write; an
/// expectation that does not hold (absent, a stale version) conflicts and
/// its batch writes none of its keys; a write fenced by an exclusive grant
/// commits, one fenced by a shared or released grant is refused and writes
/// nothing; keys list sorted, in pages, per bucket; an oversize value or
/// batch is refused before anything is written.
pub(super) async fn key_value_writes_are_versioned_whole_and_fenced(s: &Subject) {
    if !s.features.key_value {
        return skipped(
            "key_value_writes_are_versioned_whole_and_fenced",
            "key-value store",
        );
    }
    let bucket = Bucket::new("conformance").expect("bucket");
    let session = s.backend.open_session("kv");
    let store = session.key_value().expect("key_value");
    emptied(store, &bucket).await;

    let plain = store.kv_write(&bucket, &[put("n", b"1")], &[]).await;
    assert_eq!(plain, Ok(KvCommit::Committed));
    let first = store.kv_get(&bucket, &key("n")).await.expect("get");
    let first = first.expect("the entry");
    assert_eq!(first.value, b"1");
    let again = store.kv_write(&bucket, &[put("n", b"2")], &[]).await;
    assert_eq!(again, Ok(KvCommit::Committed));
    let second = store.kv_get(&bucket, &key("n")).await.expect("get");
    let second = second.expect("the entry");
    assert_ne!(first.version, second.version, "a write changes the version");

    let absent = KvWrite {
        key: key("n"),
        value: Some(b"x".to_vec()),
        expect: Expect::Absent,
    };
    let stale = KvWrite {
        key: key("n"),
        value: Some(b"x".to_vec()),
        expect: Expect::Version(first.version),
    };
    for failing in [absent, stale] {
        let batch = [put("side", b"x"), failing];
        let answer = store.kv_write(&bucket, &batch, &[]).await;
        assert_eq!(answer, Ok(KvCommit::Conflict(key("n"))));
        let side = store.kv_get(&bucket, &key("side")).await.expect("get");
        assert_eq!(side, None, "nothing of a batch that conflicted");
    }
    let current = KvWrite {
        key: key("n"),
        value: Some(b"3".to_vec()),
        expect: Expect::Version(second.version),
    };
    let swapped = store.kv_write(&bucket, &[current], &[]).await;
    assert_eq!(swapped, Ok(KvCommit::Committed));

    let lock = name("conf/kv");
    let exclusive = session
        .acquire(&lock, Mode::Exclusive, Some(TEST_WAIT_LIMIT))
        .await
        .expect("exclusive");
    let fenced = [put("f/1", b"a"), put("f/2", b"b")];
    let answer = store.kv_write(&bucket, &fenced, &[exclusive.id]).await;
    assert_eq!(answer, Ok(KvCommit::Committed));
    session.release(exclusive.id).expect("release");
    let released = store
        .kv_write(&bucket, &[put("f/1", b"late")], &[exclusive.id])
        .await;
    assert!(
        matches!(released, Err(BackendError::UnknownGrant(_))),
        "through a released grant: {released:?}"
    );
    let shared = session
        .acquire(&lock, Mode::Shared, Some(TEST_WAIT_LIMIT))
        .await
        .expect("shared");
    let through_shared = store
        .kv_write(&bucket, &[put("f/1", b"shared")], &[shared.id])
        .await;
    assert!(
        matches!(through_shared, Err(BackendError::InvalidRequest(_))),
        "through a shared grant: {through_shared:?}"
    );
    session.release(shared.id).expect("release");
    let kept = store.kv_get(&bucket, &key("f/1")).await.expect("get");
    assert_eq!(kept.map(|e| e.value), Some(b"a".to_vec()));

    let big = store
        .kv_write(&bucket, &[put("big", &vec![0; MAX_VALUE_BYTES + 1])], &[])
        .await;
    assert!(
        matches!(big, Err(BackendError::LimitExceeded(_))),
        "{big:?}"
    );
    let many: Vec<KvWrite> = (0..=MAX_BATCH_KEYS)
        .map(|i| put(&format!("m{i}"), b"v"))
        .collect();
    let over = store.kv_write(&bucket, &many, &[]).await;
    assert!(
        matches!(over, Err(BackendError::LimitExceeded(_))),
        "{over:?}"
    );

    let listed = store.kv_keys(&bucket, 0, 10).await.expect("keys");
    assert_eq!(listed, ["f/1", "f/2", "n"]);
    assert_eq!(store.kv_keys(&bucket, 1, 1).await.expect("keys"), ["f/2"]);
    let elsewhere = Bucket::new("conformance-other").expect("bucket");
    assert_eq!(store.kv_keys(&elsewhere, 0, 10).await, Ok(Vec::new()));
    emptied(store, &bucket).await;
    assert_eq!(store.kv_keys(&bucket, 0, 10).await, Ok(Vec::new()));
    s.wait_len("conf/kv", 0).await;
}
