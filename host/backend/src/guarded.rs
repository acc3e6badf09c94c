//! The guarded store: small values that belong to a lock name and are written
//! only while the writer's exclusive grant of that name still stands on the
//! engine, checked and written in one atomic operation there.
//!
//! A lock protects nothing by itself: a holder paused past its session (a GC,
//! a stopped VM, SIGSTOP) comes back believing it holds the lock and
//! overwrites the next holder's work. A guest's every effect passes through
//! its host, so the host makes the write itself conditional on the grant
//! (ZooKeeper: one `multi` with a `check` of the holder's node; etcd: one
//! transaction comparing the holder key's create revision; memory: under its
//! lock table), instead of trusting the guest to check a token in time.
//!
//! What is engine-neutral lives here: the limits, key validation, the stored
//! form of an entry (the writer's fencing token beside the value) and the
//! escaping that keeps names and keys one path segment each.

use super::{BackendError, Result};
use crate::GrantId;
use crate::name::LockName;

/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 512;

/// The largest value, in bytes (well below ZooKeeper's 1 MiB node limit and
/// etcd's 1.5 MiB request limit, with room for the entry's header).
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// The most keys one `keys` call lists, whatever limit it asks for.
pub const MAX_LISTED_KEYS: u32 = 1024;

/// One entry of the guarded store, as `get` reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardedEntry {
    /// The value as written.
    pub value: Vec<u8>,
    /// The fencing token of the grant whose write made this entry.
    pub token: u64,
    /// The engine's revision of the write (ZooKeeper: the `mzxid`; etcd: the
    /// key's mod revision; memory: a counter of the backend's writes):
    /// strictly increasing over the writes of one entry.
    pub revision: u64,
}

/// A validated key of the guarded store: 1..=[`MAX_KEY_BYTES`] bytes of
/// UTF-8 without control characters. Any other character is allowed; the
/// engines escape it ([`escape`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GuardedKey(String);

impl GuardedKey {
    /// Validates `key`.
    ///
    /// # Errors
    /// [`BackendError::InvalidRequest`] for an empty key or one with a
    /// control character; [`BackendError::LimitExceeded`] for one longer
    /// than [`MAX_KEY_BYTES`].
    pub fn new(key: &str) -> Result<GuardedKey> {
        check_key("guarded key", key)?;
        Ok(GuardedKey(key.to_owned()))
    }

    /// The key as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for GuardedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Refuses a key (`what` names its kind in the error) that is empty, longer
/// than [`MAX_KEY_BYTES`] or holds a control character.
///
/// # Errors
/// [`BackendError::InvalidRequest`] or [`BackendError::LimitExceeded`]
/// naming the key and the rule.
pub(crate) fn check_key(what: &str, key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(BackendError::InvalidRequest(format!(
            "{what} is empty; a key is 1 to {MAX_KEY_BYTES} bytes"
        )));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(BackendError::LimitExceeded(format!(
            "{what} is {} bytes long; at most {MAX_KEY_BYTES} are allowed",
            key.len()
        )));
    }
    if let Some((at, found)) = key.char_indices().find(|(_, c)| c.is_control()) {
        return Err(BackendError::InvalidRequest(format!(
            "{what} {key:?} contains the control character {found:?} at byte {at}"
        )));
    }
    Ok(())
}

/// Refuses a value larger than [`MAX_VALUE_BYTES`].
///
/// # Errors
/// [`BackendError::LimitExceeded`] naming the size and the limit.
pub fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(BackendError::LimitExceeded(format!(
            "guarded value is {} bytes long; at most {MAX_VALUE_BYTES} are allowed",
            value.len()
        )));
    }
    Ok(())
}

/// The first byte of a stored entry: its format (a later format gets
/// another).
const FORMAT_V1: u8 = 1;

/// An entry as engines store it: the format byte, the writer's fencing
/// token (8 bytes, big-endian), then the value.
pub fn encode_entry(token: u64, value: &[u8]) -> Vec<u8> {
    let mut stored = Vec::with_capacity(9 + value.len());
    stored.push(FORMAT_V1);
    stored.extend_from_slice(&token.to_be_bytes());
    stored.extend_from_slice(value);
    stored
}

/// Reads what [`encode_entry`] stored, with the engine's `revision`.
///
/// # Errors
/// [`BackendError::Unavailable`] for bytes that are no entry (someone else
/// wrote under the store's root).
pub fn decode_entry(stored: &[u8], revision: u64) -> Result<GuardedEntry> {
    match stored.split_first() {
        Some((&FORMAT_V1, rest)) if rest.len() >= 8 => {
            let (token, value) = rest.split_at(8);
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(token);
            Ok(GuardedEntry {
                value: value.to_vec(),
                token: u64::from_be_bytes(bytes),
                revision,
            })
        }
        _ => Err(BackendError::Unavailable(
            "a guarded entry in the lock service is not in wardlock's format (was it written by another client?)".into(),
        )),
    }
}

/// `text` as one path segment: `%`, `/` and every byte outside printable
/// ASCII percent-encoded. Prefix-preserving (the escape of a prefix is a
/// prefix of the escape), so a key prefix can be listed as a path prefix.
pub fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'%' | b'/' => escaped.push_str(&format!("%{byte:02X}")),
            0x21..=0x7e => escaped.push(char::from(byte)),
            _ => escaped.push_str(&format!("%{byte:02X}")),
        }
    }
    escaped
}

/// The inverse of [`escape`]; `None` for text [`escape`] cannot have made.
pub fn unescape(escaped: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(escaped.len());
    let mut rest = escaped.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = tail.get(..2)?;
            let hex = std::str::from_utf8(hex).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// `listed` (keys in any order) sorted, those starting with `prefix`, at
/// most `limit` (and [`MAX_LISTED_KEYS`]).
pub fn listed_keys(
    listed: impl IntoIterator<Item = String>,
    prefix: &str,
    limit: u32,
) -> Vec<String> {
    let mut keys: Vec<String> = listed
        .into_iter()
        .filter(|k| k.starts_with(prefix))
        .collect();
    keys.sort();
    let limit = limit.min(MAX_LISTED_KEYS);
    keys.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    keys
}

/// The error for a write through a grant that is not an exclusive lock.
pub fn not_exclusive(what: &str) -> BackendError {
    BackendError::InvalidRequest(format!(
        "a guarded write needs an exclusive holder; this is {what}"
    ))
}

/// A store per lock whose writes commit only while the writer holds the
/// lock: a capability of a [`LockSession`](crate::LockSession) ([`LockSession::guarded_store`](crate::LockSession::guarded_store)).
#[async_trait::async_trait]
pub trait GuardedStore: Send + Sync {
    /// The entry `key` of lock `name`'s guarded store ([`guarded`](crate::guarded)), if
    /// any. Reading needs no grant; a reader that does not hold `name` sees
    /// a snapshot that may be out of date as soon as it is returned.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the lock service failed or did not
    /// answer.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn guarded_get(&self, name: &LockName, key: &GuardedKey) -> Result<Option<GuardedEntry>>;

    /// Writes `value` under `key` in the guarded store of the lock `holder`
    /// holds, in one atomic operation on the engine that commits only if
    /// `holder` (an exclusive grant of this session) still stands there: its
    /// node or key exists in the session it was granted in, and, under
    /// host-local hand-off, the local grant is still this session's. The
    /// entry records `holder`'s fencing token. Returns the write's revision
    /// ([`GuardedEntry::revision`]).
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `holder` is not held by this
    /// session (released); [`BackendError::Lost`] when its grant no longer
    /// stands on the engine (nothing was written);
    /// [`BackendError::InvalidRequest`] when `holder` is a shared grant or a
    /// permit; [`BackendError::LimitExceeded`] for a value above
    /// [`MAX_VALUE_BYTES`]; [`BackendError::Unavailable`] when the
    /// lock service failed or did not answer (the write may or may not have
    /// committed, as with any write whose answer is lost).
    ///
    /// # Cancellation safety
    /// A dropped call may still commit, once, if its request already left:
    /// and then only while `holder` stood on the engine.
    async fn guarded_put(&self, holder: GrantId, key: &GuardedKey, value: &[u8]) -> Result<u64>;

    /// Deletes `key` from the guarded store of the lock `holder` holds, under
    /// the rules of [`GuardedStore::guarded_put`]: true when there was an
    /// entry. A store left empty leaves nothing behind on the engine.
    ///
    /// # Errors
    /// As [`GuardedStore::guarded_put`], without `LimitExceeded`.
    ///
    /// # Cancellation safety
    /// As [`GuardedStore::guarded_put`].
    async fn guarded_delete(&self, holder: GrantId, key: &GuardedKey) -> Result<bool>;

    /// The keys of lock `name`'s guarded store that start with `prefix`,
    /// sorted, at most `limit` (and [`MAX_LISTED_KEYS`]).
    ///
    /// # Errors
    /// As [`GuardedStore::guarded_get`].
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn guarded_keys(&self, name: &LockName, prefix: &str, limit: u32) -> Result<Vec<String>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_with_their_token() {
        let stored = encode_entry(0x0102_0304_0506_0708, b"value");
        let entry = decode_entry(&stored, 7).expect("decodes");
        assert_eq!(entry.value, b"value");
        assert_eq!(entry.token, 0x0102_0304_0506_0708);
        assert_eq!(entry.revision, 7);
        assert!(decode_entry(b"plain", 1).is_err());
        assert!(decode_entry(&[FORMAT_V1, 0, 0], 1).is_err());
    }

    #[test]
    fn escaping_keeps_one_segment_and_round_trips() {
        for text in ["a/b", "100%", "plain-key_1.x", "ünï cødé", " ", "%2F"] {
            let escaped = escape(text);
            assert!(!escaped.contains('/'), "{escaped}");
            assert_eq!(unescape(&escaped).as_deref(), Some(text));
        }
        assert!(escape("a/b/c").starts_with(&escape("a/b")));
        assert_eq!(unescape("%zz"), None);
    }

    #[test]
    fn keys_are_validated_with_the_reason() {
        assert!(GuardedKey::new("orders/42").is_ok());
        assert!(matches!(
            GuardedKey::new(""),
            Err(BackendError::InvalidRequest(_))
        ));
        assert!(matches!(
            GuardedKey::new(&"k".repeat(MAX_KEY_BYTES + 1)),
            Err(BackendError::LimitExceeded(_))
        ));
        assert!(matches!(
            GuardedKey::new("a\nb"),
            Err(BackendError::InvalidRequest(why)) if why.contains("control")
        ));
        assert!(check_value(&vec![0; MAX_VALUE_BYTES]).is_ok());
        assert!(matches!(
            check_value(&vec![0; MAX_VALUE_BYTES + 1]),
            Err(BackendError::LimitExceeded(_))
        ));
    }

    #[test]
    fn listing_filters_sorts_and_bounds() {
        let keys = ["b2", "a", "b1", "c"].map(String::from);
        assert_eq!(listed_keys(keys.clone(), "b", 10), ["b1", "b2"]);
        assert_eq!(listed_keys(keys, "", 2), ["a", "b1"]);
    }
}
