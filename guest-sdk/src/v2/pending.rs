//! An acquisition waiting in the lock's queue while the guest runs on.

use wasip2::io::poll::Pollable;

use super::Guard;
use super::bindings::wardlock::lock::locks::PendingLock;
use crate::Error;

/// A lock requested with [`Lock::acquire_async`](super::Lock::acquire_async).
/// Dropping it withdraws the request (or releases a grant nobody took).
#[must_use = "the request is withdrawn as soon as it is dropped"]
pub struct Pending {
    raw: PendingLock,
}

impl Pending {
    pub(crate) fn from_raw(raw: PendingLock) -> Self {
        Self { raw }
    }

    /// A pollable ready once the acquisition finished (granted or failed);
    /// drop it before the `Pending`.
    pub fn subscribe(&self) -> Pollable {
        self.raw.subscribe()
    }

    /// `None` while waiting; then the guard or the error, once (later calls
    /// give [`Error::InvalidRequest`]).
    pub fn get(&self) -> Option<Result<Guard, Error>> {
        self.raw
            .get()
            .map(|result| result.map(Guard::from_raw).map_err(Error::from))
    }

    /// Waits until the acquisition finished and returns its result.
    ///
    /// # Errors
    /// What [`Lock::acquire`](super::Lock::acquire) would have returned.
    pub fn wait(self) -> Result<Guard, Error> {
        let ready = self.subscribe();
        ready.block();
        drop(ready);
        self.get().unwrap_or_else(|| {
            Err(Error::Unavailable(
                "the host reported a finished acquisition without a result".into(),
            ))
        })
    }
}
