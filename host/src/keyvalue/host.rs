//! `wasi:keyvalue`'s `store`, `atomics` and `batch` implemented on
//! [`KeyValueView`]: each call validates what the guest sent, then goes to
//! the engine's key-value store through the instance's [`KeyValueCtx`].

use std::time::Duration;

use wasmtime::component::Resource;

use super::KeyValueView;
use super::bindings::wasi::keyvalue::{atomics, batch, store};
use super::ctx::{BucketHandle, KeyValueCtx};
use crate::backend::BackendError;
use crate::backend::keyvalue::{
    Bucket, Expect, KvCommit, KvKey, KvWrite, MAX_LISTED_KEYS, check_batch,
};

/// Attempts of one `increment` against writers of the same key (each a read
/// and a compare-and-write) before it gives up and says so.
const INCREMENT_ATTEMPTS: u32 = 200;

type Answer<T> = wasmtime::Result<Result<T, store::Error>>;

/// The guest-visible error for an engine's answer.
fn error_of(ctx: &KeyValueCtx, error: BackendError) -> store::Error {
    match error {
        BackendError::Lost => store::Error::Other(ctx.lost_message()),
        other => store::Error::Other(other.to_string()),
    }
}

impl KeyValueView<'_> {
    fn bucket(&self, handle: &Resource<BucketHandle>) -> wasmtime::Result<Bucket> {
        Ok(self.table.get(handle)?.bucket.clone())
    }
}

// The calls below borrow the context alone, not the view: the view's
// resource table is not `Sync`, and a host call's future must be `Send`.
impl KeyValueCtx {
    /// Reads `key`: its value and version, or `None`.
    async fn read(
        &self,
        bucket: &Bucket,
        key: &str,
    ) -> Result<Option<(Vec<u8>, u64)>, store::Error> {
        let read = async {
            let key = KvKey::new(key)?;
            self.store()?.kv_get(bucket, &key).await
        };
        match read.await {
            Ok(entry) => Ok(entry.map(|e| (e.value, e.version))),
            Err(error) => Err(error_of(self, error)),
        }
    }

    /// Commits `writes`, which expect nothing of their keys.
    async fn write_all(&self, bucket: &Bucket, writes: Vec<KvWrite>) -> Result<(), store::Error> {
        match self.write(bucket, &writes).await {
            Ok(KvCommit::Committed) => Ok(()),
            Ok(KvCommit::Conflict(key)) => Err(store::Error::Other(format!(
                "the write of key {key:?} conflicted with another though it expected nothing"
            ))),
            Err(error) => Err(error_of(self, error)),
        }
    }

    /// Writes `value` under `key` (`None`: deletes it), plainly.
    async fn write_one(
        &self,
        bucket: &Bucket,
        key: &str,
        value: Option<Vec<u8>>,
    ) -> Result<(), store::Error> {
        let key = KvKey::new(key).map_err(|e| error_of(self, e))?;
        let write = match value {
            Some(value) => KvWrite::put(key, value),
            None => KvWrite::delete(key),
        };
        self.write_all(bucket, vec![write]).await
    }

    /// Adds `delta` to the decimal number stored under `key` (absent: 0) by
    /// compare-and-write on the entry's version, again while another writer
    /// got in between.
    async fn add(&self, bucket: &Bucket, key: &str, delta: u64) -> Result<u64, store::Error> {
        let kv_key = KvKey::new(key).map_err(|e| error_of(self, e))?;
        for attempt in 0..INCREMENT_ATTEMPTS {
            let (current, expect) = match self.read(bucket, key).await? {
                None => (0, Expect::Absent),
                Some((value, version)) => (number(key, &value)?, Expect::Version(version)),
            };
            let next = current.checked_add(delta).ok_or_else(|| {
                store::Error::Other(format!(
                    "incrementing key {key:?} ({current}) by {delta} overflows a u64"
                ))
            })?;
            let write = KvWrite {
                key: kv_key.clone(),
                value: Some(next.to_string().into_bytes()),
                expect,
            };
            match self.write(bucket, std::slice::from_ref(&write)).await {
                Ok(KvCommit::Committed) => return Ok(next),
                Ok(KvCommit::Conflict(_)) => {
                    // Another writer got in: read again, after a pause that
                    // grows so that writers of one hot key spread out.
                    let pause = Duration::from_micros(50 * u64::from(attempt.min(40)));
                    tokio::time::sleep(pause).await;
                }
                Err(error) => return Err(error_of(self, error)),
            }
        }
        Err(store::Error::Other(format!(
            "increment of key {key:?} lost the race to other writers {INCREMENT_ATTEMPTS} times; nothing was written"
        )))
    }
}

/// The decimal number `value` holds (what `increment` writes).
fn number(key: &str, value: &[u8]) -> Result<u64, store::Error> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
        .ok_or_else(|| {
            store::Error::Other(format!(
                "key {key:?} does not hold a decimal u64, so it cannot be incremented"
            ))
        })
}

impl store::Host for KeyValueView<'_> {
    async fn open(&mut self, identifier: String) -> Answer<Resource<BucketHandle>> {
        let Some(bucket) = self.ctx.buckets().open(&identifier) else {
            return Ok(Err(store::Error::NoSuchStore));
        };
        Ok(Ok(self.table.push(BucketHandle { bucket })?))
    }
}

impl store::HostBucket for KeyValueView<'_> {
    async fn get(
        &mut self,
        handle: Resource<BucketHandle>,
        key: String,
    ) -> Answer<Option<Vec<u8>>> {
        let bucket = self.bucket(&handle)?;
        Ok(self
            .ctx
            .read(&bucket, &key)
            .await
            .map(|e| e.map(|(value, _)| value)))
    }

    async fn set(
        &mut self,
        handle: Resource<BucketHandle>,
        key: String,
        value: Vec<u8>,
    ) -> Answer<()> {
        let bucket = self.bucket(&handle)?;
        Ok(self.ctx.write_one(&bucket, &key, Some(value)).await)
    }

    async fn delete(&mut self, handle: Resource<BucketHandle>, key: String) -> Answer<()> {
        let bucket = self.bucket(&handle)?;
        Ok(self.ctx.write_one(&bucket, &key, None).await)
    }

    async fn exists(&mut self, handle: Resource<BucketHandle>, key: String) -> Answer<bool> {
        let bucket = self.bucket(&handle)?;
        Ok(self.ctx.read(&bucket, &key).await.map(|e| e.is_some()))
    }

    async fn list_keys(
        &mut self,
        handle: Resource<BucketHandle>,
        cursor: Option<u64>,
    ) -> Answer<store::KeyResponse> {
        let bucket = self.bucket(&handle)?;
        let skip = cursor.unwrap_or(0);
        let listed = async {
            self.ctx
                .store()?
                .kv_keys(&bucket, skip, MAX_LISTED_KEYS)
                .await
        };
        Ok(match listed.await {
            Ok(keys) => {
                // A full page may have more behind it: its cursor is where
                // the next page starts.
                let full = keys.len() == MAX_LISTED_KEYS as usize;
                let cursor = full.then(|| skip.saturating_add(keys.len() as u64));
                Ok(store::KeyResponse { keys, cursor })
            }
            Err(error) => Err(error_of(self.ctx, error)),
        })
    }

    async fn drop(&mut self, handle: Resource<BucketHandle>) -> wasmtime::Result<()> {
        self.table.delete(handle)?;
        Ok(())
    }
}

impl atomics::Host for KeyValueView<'_> {
    async fn increment(
        &mut self,
        handle: Resource<BucketHandle>,
        key: String,
        delta: u64,
    ) -> Answer<u64> {
        let bucket = self.bucket(&handle)?;
        Ok(self.ctx.add(&bucket, &key, delta).await)
    }
}

impl batch::Host for KeyValueView<'_> {
    async fn get_many(
        &mut self,
        handle: Resource<BucketHandle>,
        keys: Vec<String>,
    ) -> Answer<Vec<Option<(String, Vec<u8>)>>> {
        let bucket = self.bucket(&handle)?;
        if let Err(error) = check_batch(keys.len()) {
            return Ok(Err(error_of(self.ctx, error)));
        }
        let mut found = Vec::with_capacity(keys.len());
        for key in keys {
            match self.ctx.read(&bucket, &key).await {
                Ok(entry) => found.push(entry.map(|(value, _)| (key, value))),
                Err(error) => return Ok(Err(error)),
            }
        }
        Ok(Ok(found))
    }

    async fn set_many(
        &mut self,
        handle: Resource<BucketHandle>,
        key_values: Vec<(String, Vec<u8>)>,
    ) -> Answer<()> {
        let bucket = self.bucket(&handle)?;
        let writes = key_values
            .into_iter()
            .map(|(key, value)| Ok(KvWrite::put(KvKey::new(&key)?, value)))
            .collect::<Result<Vec<_>, BackendError>>();
        Ok(match writes {
            Ok(writes) => self.ctx.write_all(&bucket, writes).await,
            Err(error) => Err(error_of(self.ctx, error)),
        })
    }

    async fn delete_many(
        &mut self,
        handle: Resource<BucketHandle>,
        keys: Vec<String>,
    ) -> Answer<()> {
        let bucket = self.bucket(&handle)?;
        let writes = keys
            .iter()
            .map(|key| Ok(KvWrite::delete(KvKey::new(key)?)))
            .collect::<Result<Vec<_>, BackendError>>();
        Ok(match writes {
            Ok(writes) => self.ctx.write_all(&bucket, writes).await,
            Err(error) => Err(error_of(self.ctx, error)),
        })
    }
}
