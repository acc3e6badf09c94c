//! Errors a lock backend reports.

/// What a backend call answers: `Result<T>` is `Result<T, BackendError>`, as
/// `std::io::Result` is for I/O, so that the session and capability traits
/// (and every engine's implementation of them) read one signature per line.
pub type Result<T, E = BackendError> = std::result::Result<T, E>;

/// Why a backend call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The wait's timeout passed before the lock was granted.
    #[error("timed out waiting for the lock")]
    Timeout,
    /// The session lost its locks (for example the backend session expired).
    #[error("the lock session was lost")]
    Lost,
    /// The grant is not held by this session (released already, or never granted).
    #[error("unknown grant {0}")]
    UnknownGrant(u64),
    /// The backend cannot do what was asked (the text says what and why).
    #[error("{0}")]
    Unsupported(String),
    /// The lock service cannot be reached (beyond its session timeout) or
    /// failed. Nothing else: see `docs/error-contract.md`.
    #[error("lock service unavailable: {0}")]
    Unavailable(String),
    /// The lock service refused this host for good (an ACL, a failed
    /// authentication); the text is a whole sentence naming the refusal and
    /// what to check. Guests see it as `denied`.
    #[error("{0}")]
    Refused(String),
    /// The backend's configuration cannot work (the text names the setting);
    /// retrying does not help. Backends describe their own configuration errors
    /// (e.g. `wardlock_zookeeper::ConfigError`) and convert them into this.
    #[error("invalid lock backend configuration: {0}")]
    InvalidConfig(String),
    /// The request itself is malformed (the text names what is wrong, e.g. a
    /// semaphore asked for zero permits, or for another permit count than
    /// its current holders and waiters use); retrying does not help.
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// A size limit was exceeded (a guarded value or key too large); the
    /// text names the size and the limit.
    #[error("limit exceeded: {0}")]
    LimitExceeded(String),
    /// Waiting for the lock named here would close a wait-for cycle among
    /// this host's sessions (a deadlock: each waits for a lock another of
    /// them holds), so this wait, the youngest in the cycle, was refused or
    /// ended; the caller should release what it holds and retry. Guests see
    /// it as `would-deadlock`.
    #[error("waiting for lock {0:?} would deadlock (a wait-for cycle among this host's guests)")]
    WouldDeadlock(String),
}
