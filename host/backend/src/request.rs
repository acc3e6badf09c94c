//! What a lock session is asked to grant: one request type for locks and
//! semaphore permits, so a backend implements taking a grant once and a
//! wrapper (the hold lease, metrics, a test's tap) forwards every kind of
//! grant with one method.

use super::Mode;
use crate::name::LockName;

/// One thing to acquire: a lock in a mode, or a permit of a semaphore.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The lock's or the semaphore's name.
    pub name: &'a LockName,
    /// A lock or a permit.
    pub kind: RequestKind,
}

/// Whether a [`Request`] asks for a lock or a semaphore permit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// The lock `name` in this mode.
    Lock(Mode),
    /// One permit of the semaphore `name`, which has this many permits.
    Permit(u32),
}

impl<'a> Request<'a> {
    /// Asks for the lock `name` in `mode`.
    pub fn lock(name: &'a LockName, mode: Mode) -> Self {
        Request {
            name,
            kind: RequestKind::Lock(mode),
        }
    }

    /// Asks for one of the `permits` permits of semaphore `name`.
    pub fn permit(name: &'a LockName, permits: u32) -> Self {
        Request {
            name,
            kind: RequestKind::Permit(permits),
        }
    }
}

impl RequestKind {
    /// A short label for logs and metrics: `exclusive`, `shared` or `permit`.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestKind::Lock(mode) => mode.as_str(),
            RequestKind::Permit(_) => "permit",
        }
    }
}
