//! Why a guest's lock call failed, independent of the WIT bindings.

use crate::backend::BackendError;
use crate::name::InvalidName;

/// A lock call's failure, one case per WIT `error` case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The name failed validation.
    #[error("invalid lock name: {0}")]
    InvalidName(#[from] InvalidName),
    /// The plugin is not granted the name.
    #[error("lock {0:?} is not granted to this plugin")]
    Denied(String),
    /// The lock service refused this host (an ACL, authentication); the text
    /// is the whole sentence. Guests see it as `denied`.
    #[error("{0}")]
    Refused(String),
    /// The timeout passed while waiting.
    #[error("timed out waiting for the lock")]
    Timeout,
    /// Waiting for the named lock would deadlock: exclusive requested while
    /// this instance holds the name only shared, or the wait would close a
    /// wait-for cycle among the host's guests (the host's lock table broke
    /// the cycle by refusing or ending this wait, the youngest in it).
    #[error("waiting for lock {0:?} would deadlock")]
    WouldDeadlock(String),
    /// The lock was lost.
    #[error("the lock was lost")]
    Lost,
    /// The handle was released already.
    #[error("the lock handle was already released")]
    Released,
    /// A per-instance limit was reached.
    #[error("limit exceeded: {0}")]
    LimitExceeded(String),
    /// The lock service failed.
    #[error("lock service unavailable: {0}")]
    Unavailable(String),
    /// The request as a whole is malformed (an empty or duplicate
    /// `acquire-many` list, a pending result taken twice); WIT 0.2.0 only.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl From<BackendError> for LockError {
    fn from(error: BackendError) -> Self {
        match error {
            BackendError::Timeout => LockError::Timeout,
            BackendError::Lost | BackendError::UnknownGrant(_) => LockError::Lost,
            BackendError::Refused(why) => LockError::Refused(why),
            // Only a service that cannot be used is `unavailable`
            // (docs/error-contract.md): a request the engine cannot serve
            // is a malformed request for it, and retrying never helps.
            BackendError::Unsupported(why) | BackendError::InvalidRequest(why) => {
                LockError::InvalidRequest(why)
            }
            BackendError::Unavailable(why) | BackendError::InvalidConfig(why) => {
                LockError::Unavailable(why)
            }
            BackendError::LimitExceeded(why) => LockError::LimitExceeded(why),
            BackendError::WouldDeadlock(name) => LockError::WouldDeadlock(name),
            // A kind added to the toolkit after this host was written: the
            // service failed in a way this host cannot name better.
            other => LockError::Unavailable(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_backend_request_stays_a_typed_invalid_request() {
        let why = "semaphore \"s\" asked for 0 permits".to_owned();
        assert_eq!(
            LockError::from(BackendError::InvalidRequest(why.clone())),
            LockError::InvalidRequest(why)
        );
    }

    #[test]
    fn only_an_unreachable_service_is_unavailable() {
        let refused = "ZooKeeper refused this host: no auth".to_owned();
        assert_eq!(
            LockError::from(BackendError::Refused(refused.clone())),
            LockError::Refused(refused)
        );
        let unsupported = "the curator-mutex dialect has no shared locks".to_owned();
        assert_eq!(
            LockError::from(BackendError::Unsupported(unsupported.clone())),
            LockError::InvalidRequest(unsupported)
        );
        assert_eq!(LockError::from(BackendError::Timeout), LockError::Timeout);
        assert_eq!(
            LockError::from(BackendError::WouldDeadlock("x".into())),
            LockError::WouldDeadlock("x".into())
        );
        assert!(matches!(
            LockError::from(BackendError::Unavailable("down".into())),
            LockError::Unavailable(_)
        ));
    }
}
