//! The key-value calls both WIT versions serve, written once on
//! [`KeyValueCtx`]: each validates what the guest sent, goes to the engine's
//! key-value store and answers with the value or the message of the version's
//! `error.other` (the two versions' `error` types are distinct, and every
//! failure here is an `other`; `no-such-store` comes from `open` alone).
//!
//! They borrow the context alone, not the view: the view's resource table is
//! not `Sync`, and a host call's future must be `Send`.

use std::time::Duration;

use super::ctx::KeyValueCtx;
use crate::backend::BackendError;
use crate::backend::keyvalue::{Bucket, Expect, KvCommit, KvKey, KvWrite, MAX_LISTED_KEYS};

/// Attempts of one `increment` against writers of the same key (each a read
/// and a compare-and-write) before it gives up and says so.
const INCREMENT_ATTEMPTS: u32 = 200;

/// The number type an `increment` counts in: 0.2.0-draft's `u64` or
/// 0.2.0-draft2's `s64`. Both store the number as decimal text, so a key one
/// version incremented reads as a number to the other while it fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counter {
    /// 0.2.0-draft: `increment(…, delta: u64) -> u64`.
    U64,
    /// 0.2.0-draft2: `increment(…, delta: s64) -> s64`.
    S64,
}

impl Counter {
    fn name(self) -> &'static str {
        match self {
            Counter::U64 => "u64",
            Counter::S64 => "s64",
        }
    }

    fn range(self) -> (i128, i128) {
        match self {
            Counter::U64 => (0, i128::from(u64::MAX)),
            Counter::S64 => (i128::from(i64::MIN), i128::from(i64::MAX)),
        }
    }

    fn fits(self, n: i128) -> bool {
        let (low, high) = self.range();
        (low..=high).contains(&n)
    }
}

/// What the guest reads for an engine's refusal.
pub(crate) fn message(ctx: &KeyValueCtx, error: BackendError) -> String {
    match error {
        BackendError::Lost => ctx.lost_message(),
        other => other.to_string(),
    }
}

impl KeyValueCtx {
    /// Reads `key`: its value and version, or `None`.
    pub(crate) async fn read(
        &self,
        bucket: &Bucket,
        key: &str,
    ) -> Result<Option<(Vec<u8>, u64)>, String> {
        let read = async {
            let key = KvKey::new(key)?;
            self.store()?.kv_get(bucket, &key).await
        };
        match read.await {
            Ok(entry) => Ok(entry.map(|e| (e.value, e.version))),
            Err(error) => Err(message(self, error)),
        }
    }

    /// Commits `writes`, which expect nothing of their keys.
    pub(crate) async fn write_all(
        &self,
        bucket: &Bucket,
        writes: Vec<KvWrite>,
    ) -> Result<(), String> {
        match self.write(bucket, &writes).await {
            Ok(KvCommit::Committed) => Ok(()),
            Ok(KvCommit::Conflict(key)) => Err(format!(
                "the write of key {key:?} conflicted with another though it expected nothing"
            )),
            Err(error) => Err(message(self, error)),
        }
    }

    /// Writes `value` under `key` (`None`: deletes it), plainly.
    pub(crate) async fn write_one(
        &self,
        bucket: &Bucket,
        key: &str,
        value: Option<Vec<u8>>,
    ) -> Result<(), String> {
        let key = KvKey::new(key).map_err(|e| message(self, e))?;
        let write = match value {
            Some(value) => KvWrite::put(key, value),
            None => KvWrite::delete(key),
        };
        self.write_all(bucket, vec![write]).await
    }

    /// Writes `value` under `key` only if the entry is still at `version`
    /// (`None`: still absent). `Ok(false)`: another write got in first, and
    /// nothing was written.
    pub(crate) async fn write_if(
        &self,
        bucket: &Bucket,
        key: &str,
        version: Option<u64>,
        value: Vec<u8>,
    ) -> Result<bool, String> {
        let write = KvWrite {
            key: KvKey::new(key).map_err(|e| message(self, e))?,
            value: Some(value),
            expect: version.map_or(Expect::Absent, Expect::Version),
        };
        match self.write(bucket, std::slice::from_ref(&write)).await {
            Ok(KvCommit::Committed) => Ok(true),
            Ok(KvCommit::Conflict(_)) => Ok(false),
            Err(error) => Err(message(self, error)),
        }
    }

    /// Adds `delta` to the decimal number stored under `key` (absent: 0) by
    /// compare-and-write on the entry's version, again while another writer
    /// got in between. The number and the sum must fit `counter`.
    pub(crate) async fn add(
        &self,
        bucket: &Bucket,
        key: &str,
        delta: i128,
        counter: Counter,
    ) -> Result<i128, String> {
        for attempt in 0..INCREMENT_ATTEMPTS {
            let (current, version) = match self.read(bucket, key).await? {
                None => (0, None),
                Some((value, version)) => (number(key, &value, counter)?, Some(version)),
            };
            let next = current + delta;
            if !counter.fits(next) {
                return Err(format!(
                    "incrementing key {key:?} ({current}) by {delta} leaves the range of an {}; nothing was written",
                    counter.name()
                ));
            }
            if self
                .write_if(bucket, key, version, next.to_string().into_bytes())
                .await?
            {
                return Ok(next);
            }
            // Another writer got in: read again, after a pause that grows so
            // that writers of one hot key spread out.
            let pause = Duration::from_micros(50 * u64::from(attempt.min(40)));
            tokio::time::sleep(pause).await;
        }
        Err(format!(
            "increment of key {key:?} lost the race to other writers {INCREMENT_ATTEMPTS} times; nothing was written"
        ))
    }

    /// One page of `bucket`'s keys from offset `skip`, and the offset of the
    /// next page when this one is full (a full page may have more behind it).
    pub(crate) async fn keys(
        &self,
        bucket: &Bucket,
        skip: u64,
    ) -> Result<(Vec<String>, Option<u64>), String> {
        let listed = async { self.store()?.kv_keys(bucket, skip, MAX_LISTED_KEYS).await };
        match listed.await {
            Ok(keys) => {
                let full = keys.len() == MAX_LISTED_KEYS as usize;
                let next = full.then(|| skip.saturating_add(keys.len() as u64));
                Ok((keys, next))
            }
            Err(error) => Err(message(self, error)),
        }
    }

    /// Reads every key of `keys` (at most a batch's limit), in order.
    pub(crate) async fn read_many(
        &self,
        bucket: &Bucket,
        keys: Vec<String>,
    ) -> Result<Vec<Option<(String, Vec<u8>)>>, String> {
        crate::backend::keyvalue::check_batch(keys.len()).map_err(|e| message(self, e))?;
        let mut found = Vec::with_capacity(keys.len());
        for key in keys {
            let entry = self.read(bucket, &key).await?;
            found.push(entry.map(|(value, _)| (key, value)));
        }
        Ok(found)
    }

    /// Writes every pair of `key_values` (`None`: deletes the key), whole or
    /// not at all.
    pub(crate) async fn write_many(
        &self,
        bucket: &Bucket,
        key_values: Vec<(String, Option<Vec<u8>>)>,
    ) -> Result<(), String> {
        let writes = key_values
            .into_iter()
            .map(|(key, value)| {
                let key = KvKey::new(&key)?;
                Ok(match value {
                    Some(value) => KvWrite::put(key, value),
                    None => KvWrite::delete(key),
                })
            })
            .collect::<Result<Vec<_>, BackendError>>()
            .map_err(|e| message(self, e))?;
        self.write_all(bucket, writes).await
    }
}

/// The decimal number `value` holds (what `increment` writes), if it fits
/// `counter`.
fn number(key: &str, value: &[u8], counter: Counter) -> Result<i128, String> {
    std::str::from_utf8(value)
        .ok()
        .and_then(|text| text.parse::<i128>().ok())
        .filter(|n| counter.fits(*n))
        .ok_or_else(|| {
            format!(
                "key {key:?} does not hold a decimal {}, so it cannot be incremented",
                counter.name()
            )
        })
}
