//! What a failed etcd request means for the caller, in one place.

use etcd_client::Error as EtcdError;
use tonic::Code;

use wardlock_backend::BackendError;

/// Whether repeating the request on the same lease can help: the connection
/// dropped or the cluster is electing a leader, not a refusal.
///
/// `Cancelled` is among them: the client's transport answers it for a
/// request whose connection closed before the answer came (hyper's
/// "operation was canceled", seen when the member it spoke to was killed),
/// and a stopping member answers it (`etcdserver: request cancelled`).
/// Either leaves the outcome as unknown as `Unavailable` does, and every
/// request repeated here is written to be repeated (a put that finds its own
/// key, a delete of what may be gone). Nothing of this host's cancels a
/// request by status: a caller that gives up drops the future.
pub(super) fn retryable(error: &EtcdError) -> bool {
    match error {
        EtcdError::GRpcStatus(status) => matches!(
            status.code(),
            Code::Unavailable
                | Code::Cancelled
                | Code::DeadlineExceeded
                | Code::Aborted
                | Code::Unknown
                | Code::Internal
        ),
        EtcdError::TransportError(_) | EtcdError::IoError(_) | EtcdError::WatchError(_) => true,
        _ => false,
    }
}

/// The backend error for a request (`what`, e.g. "grant a lease") that failed
/// with `error`: a refusal of this host is `Refused` (guests see `denied`),
/// anything else `Unavailable`.
pub(super) fn classify(error: &EtcdError, what: &str) -> BackendError {
    match error {
        EtcdError::GRpcStatus(status)
            if matches!(
                status.code(),
                Code::PermissionDenied | Code::Unauthenticated
            ) =>
        {
            BackendError::Refused(format!(
                "etcd refused this host's request to {what}: {} (check --etcd-user and the role's key permissions)",
                status.message()
            ))
        }
        EtcdError::GRpcStatus(status)
            if status.code() == Code::InvalidArgument && status.message().contains("user name") =>
        {
            BackendError::Refused(format!(
                "etcd refused this host's request to {what}: {} (the cluster has auth enabled: give --etcd-user USER --etcd-password-file FILE)",
                status.message()
            ))
        }
        EtcdError::GRpcStatus(status) => {
            BackendError::Unavailable(format!("etcd could not {what}: {}", status.message()))
        }
        other => BackendError::Unavailable(format!("etcd could not {what}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Status;

    #[test]
    fn a_cancelled_request_is_repeated_and_a_refusal_is_not() {
        // hyper's "operation was canceled": the member's connection closed
        // before it answered (a leader killed under the request).
        let cancelled = EtcdError::GRpcStatus(Status::cancelled("operation was canceled"));
        assert!(retryable(&cancelled));
        assert!(retryable(&EtcdError::GRpcStatus(Status::unavailable(
            "etcdserver: leader changed"
        ))));
        let refused = EtcdError::GRpcStatus(Status::permission_denied("no"));
        assert!(!retryable(&refused));
        assert!(matches!(
            classify(&refused, "queue for a lock"),
            BackendError::Refused(_)
        ));
    }
}
