//! What a failed PostgreSQL request means for the caller, in one place.

use tokio_postgres::error::SqlState;

use wardlock_backend::BackendError;
use wardlock_backend::tls::error_chain;

/// The backend error for a request (`what`, e.g. "take a lock") that failed
/// with `error`: a refusal of this host (authentication, rights, a database
/// that does not exist) is `Refused`, anything else `Unavailable`.
pub(crate) fn classify(error: &tokio_postgres::Error, what: &str) -> BackendError {
    let Some(db) = error.as_db_error() else {
        return BackendError::Unavailable(format!(
            "PostgreSQL could not {what}: {}",
            error_chain(error)
        ));
    };
    let code = db.code();
    let message = db.message();
    if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
    {
        return BackendError::Refused(format!(
            "PostgreSQL refused this host's login to {what}: {message} (check the role in --postgres and its password: --postgres-password-file FILE or PGPASSWORD)"
        ));
    }
    if *code == SqlState::INSUFFICIENT_PRIVILEGE {
        return BackendError::Refused(format!(
            "PostgreSQL refused this host's request to {what}: {message} (see the Postgres chapter for the rights wardlock's role needs)"
        ));
    }
    if *code == SqlState::INVALID_CATALOG_NAME {
        return BackendError::Refused(format!(
            "PostgreSQL refused this host's request to {what}: {message} (check the database in --postgres)"
        ));
    }
    BackendError::Unavailable(format!("PostgreSQL could not {what}: {message}"))
}

/// Whether `error` says a lock wait ended at its `lock_timeout`.
pub(crate) fn is_lock_timeout(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&SqlState::LOCK_NOT_AVAILABLE)
}

/// Whether `error` says the statement was cancelled (a cancel request).
pub(crate) fn is_cancelled(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&SqlState::QUERY_CANCELED)
}

/// Whether `error` says the server found a deadlock and chose this wait.
pub(crate) fn is_deadlock(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&SqlState::T_R_DEADLOCK_DETECTED)
}
