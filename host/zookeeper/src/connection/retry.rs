//! One retry policy for every ZooKeeper request wardlock makes: what a failed
//! request means for the caller, in one place (tower-style: one concern, one file).

use std::time::Duration;

use zookeeper_client::Error as ZkError;

use super::super::connection::ZkSession;
use wardlock_backend::BackendError;

/// How long to back off after a server-side refusal that may pass (throttling).
const BACKOFF: Duration = Duration::from_millis(200);

/// What to do after a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// The session lives (the connection dropped, the server is busy, an election
    /// runs): wait until it is connected again and repeat the request on it.
    SameSession,
    /// The session ended (expired, closed, moved): its ephemeral nodes are gone
    /// or going; start over on a new session.
    NewSession,
    /// The service said no to this host (an ACL, a failed authentication):
    /// retrying cannot help, and the guest is told it is denied.
    Refused,
    /// Retrying cannot help (a bad request, an unimplemented operation): the
    /// service failed for this request.
    GiveUp,
}

impl Retry {
    /// Classifies a failed request.
    pub(crate) fn of(error: &ZkError) -> Retry {
        match error {
            ZkError::ConnectionLoss
            | ZkError::Timeout
            | ZkError::Throttled
            | ZkError::NotReadOnly
            | ZkError::NodeExists
            // Transport errors (e.g. "connection reset by peer" while a failed-over
            // server drops its clients) come as custom errors.
            | ZkError::Custom(_) => Retry::SameSession,
            ZkError::SessionExpired
            | ZkError::ClientClosed
            | ZkError::SessionMoved
            | ZkError::NoHosts => Retry::NewSession,
            ZkError::NoAuth | ZkError::AuthFailed | ZkError::InvalidAcl => Retry::Refused,
            _ => Retry::GiveUp,
        }
    }
}

/// Classifies `error` and, when the request should be repeated on `session`,
/// waits until that makes sense (reconnected; after a short back-off for a busy
/// server). `Ok(true)`: repeat on this session; `Ok(false)`: start over on a new
/// session.
///
/// # Errors
/// [`BackendError::Refused`] when ZooKeeper refused this host (ACL,
/// authentication); [`BackendError::Unavailable`] naming the failure for any
/// other error retrying cannot help.
///
/// # Cancellation safety
/// Cancel safe: it only waits.
pub(crate) async fn after(session: &ZkSession, error: ZkError) -> Result<bool, BackendError> {
    match Retry::of(&error) {
        Retry::SameSession => {
            if matches!(error, ZkError::Throttled | ZkError::NotReadOnly) {
                tokio::time::sleep(BACKOFF).await;
            }
            Ok(session.connected().await.is_ok())
        }
        Retry::NewSession => Ok(false),
        Retry::Refused => Err(BackendError::Refused(format!(
            "ZooKeeper refused this host: {error} (check the ensemble's ACLs and --zk-digest)"
        ))),
        Retry::GiveUp => Err(BackendError::Unavailable(format!(
            "ZooKeeper refused: {error}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_trouble_retries_and_refusals_give_up() {
        assert_eq!(Retry::of(&ZkError::ConnectionLoss), Retry::SameSession);
        assert_eq!(Retry::of(&ZkError::Timeout), Retry::SameSession);
        assert_eq!(Retry::of(&ZkError::SessionExpired), Retry::NewSession);
        assert_eq!(Retry::of(&ZkError::SessionMoved), Retry::NewSession);
        assert_eq!(Retry::of(&ZkError::NoAuth), Retry::Refused);
        assert_eq!(Retry::of(&ZkError::InvalidAcl), Retry::Refused);
        assert_eq!(Retry::of(&ZkError::AuthFailed), Retry::Refused);
        assert_eq!(Retry::of(&ZkError::NoNode), Retry::GiveUp);
    }
}
