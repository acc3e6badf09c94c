//! Data guarded by a lock, through `wardlock:lock@0.3.0`'s `guarded` (the
//! store of 0.2.2's [`crate::v2::guarded`], awaited): small values that
//! belong to a lock name, written only while the writer's exclusive lock
//! still stands on the lock service (checked there in the same operation,
//! so a guest that paused past its session gets [`Error::Lost`] and writes
//! nothing).
//!
//! ```no_run
//! # async fn f() -> Result<(), wardlock_guest::Error> {
//! use wardlock_guest::v3::{Lock, guarded};
//!
//! let guard = Lock::exclusive("orders/42").await?;
//! let count = guarded::get("orders/42", "count")
//!     .await?
//!     .map_or(0, |e| u64::from_le_bytes(e.value.try_into().unwrap_or_default()));
//! guard.put("count", &(count + 1).to_le_bytes()).await?; // Error::Lost if the lock went
//! # Ok(()) }
//! ```
//!
//! A write, once sent, runs to the lock service's answer even if its future
//! is dropped, and the lock is passed on only after that answer.

use super::bindings::wardlock::lock::guarded as raw;
use super::{Error, Guard};
pub use crate::v2::guarded::Entry;

impl From<raw::Entry> for Entry {
    fn from(raw: raw::Entry) -> Self {
        Entry {
            value: raw.value,
            token: raw.token,
            revision: raw.revision,
        }
    }
}

/// The entry `key` of lock `name`'s store, if any. Needs no lock (the name
/// must be granted): without one, a snapshot that may be stale at once.
///
/// # Errors
/// [`Error::InvalidName`], [`Error::Denied`], [`Error::InvalidRequest`] for a
/// bad key, [`Error::Unavailable`].
pub async fn get(name: &str, key: &str) -> Result<Option<Entry>, Error> {
    Ok(raw::get(name.to_string(), key.to_string())
        .await?
        .map(Entry::from))
}

/// The keys of lock `name`'s store starting with `prefix`, sorted, at most
/// `limit` (and 1024).
///
/// # Errors
/// As [`get`].
pub async fn keys(name: &str, prefix: &str, limit: u32) -> Result<Vec<String>, Error> {
    Ok(raw::keys(name.to_string(), prefix.to_string(), limit).await?)
}

impl Guard {
    /// Writes `value` under `key` in this lock's store, only if this lock
    /// (exclusive) still stands on the lock service at the moment of the
    /// write: the write's revision.
    ///
    /// # Errors
    /// [`Error::Lost`] when the lock no longer stands (nothing written);
    /// [`Error::Released`]; [`Error::InvalidRequest`] for a shared guard or
    /// a bad key; [`Error::LimitExceeded`]; [`Error::Unavailable`].
    pub async fn put(&self, key: &str, value: &[u8]) -> Result<u64, Error> {
        Ok(raw::put(self.raw(), key.to_string(), value.to_vec()).await?)
    }

    /// Deletes `key` from this lock's store under the rules of
    /// [`Guard::put`]: true when there was an entry.
    ///
    /// # Errors
    /// As [`Guard::put`].
    pub async fn delete(&self, key: &str) -> Result<bool, Error> {
        Ok(raw::delete(self.raw(), key.to_string()).await?)
    }
}
