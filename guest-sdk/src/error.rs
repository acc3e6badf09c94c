//! Errors returned by lock operations.

use core::fmt;

use crate::bindings::wardlock::lock::types::Error as RawError;

/// Why a lock operation failed.
///
/// Mirrors the WIT `error` variant case for case. No error leaves a
/// half-acquired lock behind: when [`Lock::acquire`](crate::Lock::acquire)
/// fails, nothing is held.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Error {
    /// The lock name is not acceptable; the text says what is wrong with it.
    ///
    /// Names are 1..=255 bytes of `a-z A-Z 0-9 - _ .`, in `/`-separated
    /// segments that are neither empty nor `.` nor `..`.
    InvalidName(String),
    /// This component is not granted that name; the text is the host's
    /// sentence naming the lock (shown as it is).
    Denied(String),
    /// The timeout passed before the lock was granted.
    Timeout,
    /// Never produced by the wardlock host: a lock
    /// [`Lock::try_acquire`](crate::Lock::try_acquire) cannot take without
    /// waiting is `Ok(None)`. The WIT 0.1.0 variant has the case, so it stays.
    WouldBlock,
    /// Exclusive access was requested for a name this instance holds only
    /// shared: the request would wait on the instance itself forever.
    WouldDeadlock,
    /// The lock was lost (backend session expired); the guard cannot be used.
    Lost,
    /// The guard was already released.
    Released,
    /// A per-instance limit was reached (for example the number of live
    /// guards); the text names the limit.
    LimitExceeded(String),
    /// The lock service cannot be reached or failed; the text says how.
    Unavailable(String),
    /// The request as a whole is malformed (an empty or duplicate list for
    /// `v2::acquire_all`, a pending result taken twice); only the 0.2.0
    /// interface (feature `v2`) reports it.
    InvalidRequest(String),
}

impl From<RawError> for Error {
    fn from(raw: RawError) -> Self {
        match raw {
            RawError::InvalidName(text) => Error::InvalidName(text),
            RawError::Denied(text) => Error::Denied(text),
            RawError::Timeout => Error::Timeout,
            RawError::WouldBlock => Error::WouldBlock,
            RawError::WouldDeadlock => Error::WouldDeadlock,
            RawError::Lost => Error::Lost,
            RawError::Released => Error::Released,
            RawError::LimitExceeded(text) => Error::LimitExceeded(text),
            RawError::Unavailable(text) => Error::Unavailable(text),
        }
    }
}

impl Error {
    /// The WIT case's name, as every language's SDK spells it
    /// (`"invalid-name"`, `"timeout"`, `"lost"`, ...): for logs and for
    /// answers other programs read.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::InvalidName(_) => "invalid-name",
            Error::Denied(_) => "denied",
            Error::Timeout => "timeout",
            Error::WouldBlock => "would-block",
            Error::WouldDeadlock => "would-deadlock",
            Error::Lost => "lost",
            Error::Released => "released",
            Error::LimitExceeded(_) => "limit-exceeded",
            Error::Unavailable(_) => "unavailable",
            Error::InvalidRequest(_) => "invalid-request",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidName(text) => write!(f, "invalid lock name: {text}"),
            // The host's text is a whole sentence naming the lock.
            Error::Denied(text) => f.write_str(text),
            Error::Timeout => f.write_str("timed out waiting for the lock"),
            Error::WouldBlock => f.write_str("the lock could not be taken without waiting"),
            Error::WouldDeadlock => f.write_str(
                "would deadlock: exclusive access requested for a lock this instance holds shared",
            ),
            Error::Lost => f.write_str("the lock was lost"),
            Error::Released => f.write_str("the lock was already released"),
            Error::LimitExceeded(text) => write!(f, "lock limit exceeded: {text}"),
            Error::Unavailable(text) => write!(f, "lock service unavailable: {text}"),
            Error::InvalidRequest(text) => write!(f, "invalid lock request: {text}"),
        }
    }
}

impl std::error::Error for Error {}
