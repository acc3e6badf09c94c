//! Conversions between the generated WIT types of each package version and
//! the host's own ([`Mode`], [`GrantStatus`], [`LockError`]).

use super::bindings::wardlock::lock::types as v1;
use super::bindings_v2::wardlock::lock::locks as v2_locks;
use super::bindings_v2::wardlock::lock::types as v2;
use super::bindings_v3::wardlock::lock::locks as v3_locks;
use super::bindings_v3::wardlock::lock::types as v3;
use super::error::LockError;
use crate::backend::{Contenders, GrantStatus, Mode};

/// `mode` and `status` are the same in every version.
macro_rules! mode_and_status {
    ($types:ident) => {
        impl From<$types::Mode> for Mode {
            fn from(mode: $types::Mode) -> Self {
                match mode {
                    $types::Mode::Exclusive => Mode::Exclusive,
                    $types::Mode::Shared => Mode::Shared,
                }
            }
        }

        impl From<Mode> for $types::Mode {
            fn from(mode: Mode) -> Self {
                match mode {
                    Mode::Exclusive => $types::Mode::Exclusive,
                    Mode::Shared => $types::Mode::Shared,
                }
            }
        }

        impl From<GrantStatus> for $types::Status {
            fn from(status: GrantStatus) -> Self {
                match status {
                    GrantStatus::Held => $types::Status::Held,
                    GrantStatus::Suspended => $types::Status::Suspended,
                    GrantStatus::Lost => $types::Status::Lost,
                    GrantStatus::Released => $types::Status::Released,
                }
            }
        }
    };
}

mode_and_status!(v1);
mode_and_status!(v2);
mode_and_status!(v3);

impl From<LockError> for v1::Error {
    fn from(error: LockError) -> Self {
        match error {
            LockError::InvalidName(why) => v1::Error::InvalidName(why.to_string()),
            // The payload is the whole sentence (it names the lock), written
            // once, by `LockError`'s Display; the SDKs show it as it is.
            LockError::Denied(_) | LockError::Refused(_) => v1::Error::Denied(error.to_string()),
            LockError::Timeout => v1::Error::Timeout,
            LockError::WouldDeadlock(_) => v1::Error::WouldDeadlock,
            LockError::Lost => v1::Error::Lost,
            LockError::Released => v1::Error::Released,
            LockError::LimitExceeded(why) => v1::Error::LimitExceeded(why),
            LockError::Unavailable(why) => v1::Error::Unavailable(why),
            // Only 0.2.0's calls make it; 0.1.0 has no case of its own for it.
            LockError::InvalidRequest(why) => v1::Error::InvalidName(why),
        }
    }
}

/// 0.2.0 and 0.3.0 have the same error cases.
macro_rules! error_since_v2 {
    ($types:ident) => {
        impl From<LockError> for $types::Error {
            fn from(error: LockError) -> Self {
                match error {
                    LockError::InvalidName(why) => $types::Error::InvalidName(why.to_string()),
                    LockError::Denied(_) | LockError::Refused(_) => {
                        $types::Error::Denied(error.to_string())
                    }
                    LockError::Timeout => $types::Error::Timeout,
                    LockError::WouldDeadlock(_) => $types::Error::WouldDeadlock,
                    LockError::Lost => $types::Error::Lost,
                    LockError::Released => $types::Error::Released,
                    LockError::LimitExceeded(why) => $types::Error::LimitExceeded(why),
                    LockError::Unavailable(why) => $types::Error::Unavailable(why),
                    LockError::InvalidRequest(why) => $types::Error::InvalidRequest(why),
                }
            }
        }
    };
}

error_since_v2!(v2);
error_since_v2!(v3);

/// A backend's `contenders` answer as the WIT's `lock-queue` (0.2.1 on).
macro_rules! lock_queue {
    ($locks:ident) => {
        impl From<Contenders> for $locks::LockQueue {
            fn from(queue: Contenders) -> Self {
                $locks::LockQueue {
                    contenders: queue
                        .listed
                        .into_iter()
                        .map(|c| $locks::Contender {
                            owner: c.owner,
                            mode: c.mode.into(),
                            holds: c.holds,
                            fencing_token: c.token,
                        })
                        .collect(),
                    total: queue.total,
                }
            }
        }
    };
}

lock_queue!(v2_locks);
lock_queue!(v3_locks);
