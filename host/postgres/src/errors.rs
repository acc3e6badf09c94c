//! What a failed PostgreSQL request means for the caller, in one place.

use tokio_postgres::error::SqlState;

use wardlock_backend::BackendError;
use wardlock_backend::tls::error_chain;

/// The backend error for a request (`what`, e.g. "take a lock") that failed
/// with `error`: a refusal of this host (authentication, rights, a database
/// that does not exist) is `Refused`, anything else `Unavailable`.
pub(crate) fn classify(error: &tokio_postgres::Error, what: &str) -> BackendError {
    let Some(db) = error.as_db_error() else {
        let chain = error_chain(error);
        // Misconfigurations retrying cannot fix: refused, so a host does not
        // start (and retry every request) on them.
        if chain.contains("password missing") {
            return BackendError::Refused(format!(
                "PostgreSQL asks this host for a password to {what}: give it with --postgres-password-file FILE or the PGPASSWORD environment variable"
            ));
        }
        let lower = chain.to_lowercase();
        if lower.contains("tls") || lower.contains("certificate") || lower.contains("handshake") {
            return BackendError::Refused(format!(
                "PostgreSQL's TLS handshake failed, to {what}: {chain} ({})",
                tls_hint()
            ));
        }
        return BackendError::Unavailable(format!("PostgreSQL could not {what}: {chain}"));
    };
    let code = db.code();
    let message = db.message();
    if message.contains("certificate") {
        return BackendError::Refused(format!(
            "PostgreSQL refused this host's login to {what}: {message} ({})",
            tls_hint()
        ));
    }
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

/// What to check when TLS to the server fails.
fn tls_hint() -> String {
    "check sslrootcert (or --postgres-tls-ca: the CA that signed the server's certificate, which must name the host in the URL) and, if the server asks for a client certificate (pg_hba.conf `cert` or `clientcert=verify-full`), sslcert and sslkey (or --postgres-tls-cert and --postgres-tls-key), whose certificate's CN must be the role".into()
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
