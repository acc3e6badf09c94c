//! Data guarded by a lock (`wardlock:lock@0.2.2`'s `guarded`): small values
//! that belong to a lock name and are written only while the writer's
//! exclusive lock still stands on the lock service. The host checks the
//! lock and writes in one atomic operation there, so a guest that paused
//! past its session (its host stopped, say) and comes back gets
//! [`Error::Lost`] from [`Guard::put`], and the next holder's data stands.
//!
//! ```no_run
//! use wardlock_guest::v2::{Lock, guarded};
//!
//! let guard = Lock::exclusive("orders/42").acquire()?;
//! let count = guarded::get("orders/42", "count")?
//!     .map_or(0, |e| u64::from_le_bytes(e.value.try_into().unwrap_or_default()));
//! guard.put("count", &(count + 1).to_le_bytes())?; // Error::Lost if the lock went
//! # Ok::<(), wardlock_guest::Error>(())
//! ```
//!
//! Limits: keys are 1 to 512 bytes of text without control characters,
//! values at most 65,536 bytes ([`Error::LimitExceeded`] beyond); [`keys`]
//! lists at most 1024.

use super::bindings::wardlock::lock::guarded as raw;
use super::{Error, Guard};

/// One entry of a lock's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The value as written.
    pub value: Vec<u8>,
    /// The fencing token of the lock whose write made this entry.
    pub token: u64,
    /// The lock service's revision of that write (rises with every write).
    pub revision: u64,
}

/// The entry `key` of lock `name`'s store, if any. Needs no lock (the name
/// must be granted): without one, a snapshot that may be stale at once.
///
/// # Errors
/// [`Error::InvalidName`], [`Error::Denied`], [`Error::InvalidRequest`] for a
/// bad key, [`Error::Unavailable`].
pub fn get(name: &str, key: &str) -> Result<Option<Entry>, Error> {
    Ok(raw::get(name, key)?.map(|e| Entry {
        value: e.value,
        token: e.token,
        revision: e.revision,
    }))
}

/// The keys of lock `name`'s store starting with `prefix`, sorted, at most
/// `limit` (and 1024).
///
/// # Errors
/// As [`get`].
pub fn keys(name: &str, prefix: &str, limit: u32) -> Result<Vec<String>, Error> {
    Ok(raw::keys(name, prefix, limit)?)
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
    pub fn put(&self, key: &str, value: &[u8]) -> Result<u64, Error> {
        Ok(raw::put(&self.raw, key, value)?)
    }

    /// Deletes `key` from this lock's store under the rules of
    /// [`Guard::put`]: true when there was an entry.
    ///
    /// # Errors
    /// As [`Guard::put`].
    pub fn delete(&self, key: &str) -> Result<bool, Error> {
        Ok(raw::delete(&self.raw, key)?)
    }
}
