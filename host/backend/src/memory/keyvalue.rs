//! The in-memory key-value store ([`crate::keyvalue`]): entries beside the
//! lock table, written under the same mutex as the queues, so the fence's
//! check (every grant still stands) and the batch are one step.

use std::collections::BTreeMap;

use super::State;
use crate::BackendError;
use crate::keyvalue::{Bucket, Expect, KvCommit, KvEntry, KvKey, KvWrite, page};
use crate::name::LockName;

/// Every bucket's entries, by bucket and key.
#[derive(Default)]
pub(super) struct KeyValueStore {
    entries: BTreeMap<(Bucket, String), KvEntry>,
    /// The version of the latest write (backend-wide, so a key deleted and
    /// written again never repeats a version).
    version: u64,
}

impl State {
    /// Applies `writes` to `bucket` if every grant of `fence` (request id
    /// and name) holds its name exclusively and every write's expectation
    /// holds: all of them, or none.
    pub(super) fn kv_write(
        &mut self,
        bucket: &Bucket,
        writes: &[KvWrite],
        fence: &[(u64, LockName)],
    ) -> Result<KvCommit, BackendError> {
        for (id, name) in fence {
            self.standing_exclusive(name, *id)?;
        }
        let store = &mut self.keyvalue;
        for write in writes {
            let current = store.entries.get(&entry_key(bucket, &write.key));
            let fits = match write.expect {
                Expect::Any => true,
                Expect::Absent => current.is_none(),
                Expect::Version(version) => current.is_some_and(|e| e.version == version),
            };
            if !fits {
                return Ok(KvCommit::Conflict(write.key.clone()));
            }
        }
        for write in writes {
            let key = entry_key(bucket, &write.key);
            match &write.value {
                Some(value) => {
                    store.version += 1;
                    let entry = KvEntry {
                        value: value.clone(),
                        version: store.version,
                    };
                    store.entries.insert(key, entry);
                }
                None => {
                    store.entries.remove(&key);
                }
            }
        }
        Ok(KvCommit::Committed)
    }

    /// The entry `key` of `bucket`.
    pub(super) fn kv_get(&self, bucket: &Bucket, key: &KvKey) -> Option<KvEntry> {
        self.keyvalue.entries.get(&entry_key(bucket, key)).cloned()
    }

    /// A page of `bucket`'s keys, sorted.
    pub(super) fn kv_keys(&self, bucket: &Bucket, skip: u64, limit: u32) -> Vec<String> {
        let keys = self
            .keyvalue
            .entries
            .range((bucket.clone(), String::new())..)
            .take_while(|((entry_bucket, _), _)| entry_bucket == bucket)
            .map(|((_, key), _)| key.clone());
        page(keys, skip, limit)
    }
}

fn entry_key(bucket: &Bucket, key: &KvKey) -> (Bucket, String) {
    (bucket.clone(), key.as_str().to_owned())
}

#[cfg(test)]
mod tests {
    use crate::keyvalue::{Bucket, Expect, KvCommit, KvKey, KvWrite};
    use crate::memory::Fault;
    use crate::name::LockName;
    use crate::{BackendError, LockBackend, MemoryBackend, Mode};

    fn key(text: &str) -> KvKey {
        KvKey::new(text).expect("key")
    }

    #[tokio::test]
    async fn a_fenced_batch_commits_whole_only_while_its_grant_stands() {
        let backend = MemoryBackend::new();
        let bucket = Bucket::new("default").expect("bucket");
        let writer = backend.open_session("writer");
        let store = writer.key_value().expect("memory has a key-value store");
        let name = LockName::new("counter").expect("name");
        let grant = writer
            .acquire(&name, Mode::Exclusive, None)
            .await
            .expect("granted");
        let batch = [
            KvWrite::put(key("a"), b"1".to_vec()),
            KvWrite::put(key("b"), b"2".to_vec()),
        ];
        let committed = store.kv_write(&bucket, &batch, &[grant.id]).await;
        assert_eq!(committed, Ok(KvCommit::Committed));
        let keys = store.kv_keys(&bucket, 0, 10).await.expect("keys");
        assert_eq!(keys, ["a", "b"]);

        backend.inject("writer", Fault::Expire);
        let late = [KvWrite::put(key("a"), b"stale".to_vec())];
        let refused = store.kv_write(&bucket, &late, &[grant.id]).await;
        assert_eq!(refused, Err(BackendError::Lost));
        let kept = store.kv_get(&bucket, &key("a")).await.expect("read");
        assert_eq!(kept.map(|e| e.value), Some(b"1".to_vec()));
    }

    #[tokio::test]
    async fn a_stale_version_conflicts_and_writes_nothing_of_the_batch() {
        let backend = MemoryBackend::new();
        let bucket = Bucket::new("default").expect("bucket");
        let session = backend.open_session("cas");
        let store = session.key_value().expect("store");
        let first = [KvWrite::put(key("n"), b"0".to_vec())];
        store.kv_write(&bucket, &first, &[]).await.expect("first");
        let version = store
            .kv_get(&bucket, &key("n"))
            .await
            .expect("read")
            .expect("entry")
            .version;
        let newer = [KvWrite::put(key("n"), b"1".to_vec())];
        store.kv_write(&bucket, &newer, &[]).await.expect("newer");
        let stale = [
            KvWrite::put(key("other"), b"x".to_vec()),
            KvWrite {
                key: key("n"),
                value: Some(b"2".to_vec()),
                expect: Expect::Version(version),
            },
        ];
        let answer = store.kv_write(&bucket, &stale, &[]).await;
        assert_eq!(answer, Ok(KvCommit::Conflict(key("n"))));
        assert_eq!(store.kv_get(&bucket, &key("other")).await, Ok(None));
        let absent = [KvWrite {
            key: key("n"),
            value: Some(b"3".to_vec()),
            expect: Expect::Absent,
        }];
        let answer = store.kv_write(&bucket, &absent, &[]).await;
        assert_eq!(answer, Ok(KvCommit::Conflict(key("n"))));
    }

    #[tokio::test]
    async fn buckets_are_apart_and_a_shared_grant_is_no_fence() {
        let backend = MemoryBackend::new();
        let (one, two) = (
            Bucket::new("one").expect("b"),
            Bucket::new("two").expect("b"),
        );
        let session = backend.open_session("buckets");
        let store = session.key_value().expect("store");
        let write = [KvWrite::put(key("k"), b"v".to_vec())];
        store.kv_write(&one, &write, &[]).await.expect("write");
        assert_eq!(store.kv_keys(&two, 0, 10).await, Ok(Vec::new()));
        let name = LockName::new("readers").expect("name");
        let shared = session
            .acquire(&name, Mode::Shared, None)
            .await
            .expect("shared");
        let refused = store.kv_write(&one, &write, &[shared.id]).await;
        assert!(
            matches!(refused, Err(BackendError::InvalidRequest(ref why)) if why.contains("exclusive")),
            "{refused:?}"
        );
    }
}
