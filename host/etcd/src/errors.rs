//! What a failed etcd request means for the caller, in one place.

use etcd_client::Error as EtcdError;
use tonic::Code;

use wardlock_backend::BackendError;

/// Whether repeating the request on the same lease can help: the connection
/// dropped or the cluster is electing a leader, not a refusal.
pub(super) fn retryable(error: &EtcdError) -> bool {
    match error {
        EtcdError::GRpcStatus(status) => matches!(
            status.code(),
            Code::Unavailable
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
