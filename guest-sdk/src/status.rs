//! What a held lock currently guarantees.

use core::fmt;

use crate::bindings::wardlock::lock::types::Status as RawStatus;

/// What a [`Guard`](crate::Guard) currently guarantees, as reported by
/// [`Guard::status`](crate::Guard::status).
///
/// Mirrors the WIT `status` enum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// The lock is held: no conflicting holder exists.
    Held,
    /// The host lost contact with the lock service but the lock has not
    /// expired yet. Work that must not run unprotected should pause until the
    /// status is [`Held`](Status::Held) again.
    Suspended,
    /// The lock was taken away (for example the backend session expired).
    /// Another holder may already own it; the guard is useless now.
    Lost,
    /// The guard was released.
    Released,
}

impl Status {
    /// Returns `true` only for [`Status::Held`]: the one status under which
    /// protected work may proceed.
    pub fn is_held(self) -> bool {
        self == Status::Held
    }
}

impl From<RawStatus> for Status {
    fn from(raw: RawStatus) -> Self {
        match raw {
            RawStatus::Held => Status::Held,
            RawStatus::Suspended => Status::Suspended,
            RawStatus::Lost => Status::Lost,
            RawStatus::Released => Status::Released,
        }
    }
}

/// Formats the status with its WIT name (`held`, `suspended`, `lost`,
/// `released`).
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Held => "held",
            Status::Suspended => "suspended",
            Status::Lost => "lost",
            Status::Released => "released",
        })
    }
}
