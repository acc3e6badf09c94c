//! A held lock of the 0.2.0 interface: the crate's [`crate::Guard`] plus
//! [`Guard::subscribe`].

use wasip2::io::poll::Pollable;

use super::bindings::wardlock::lock::locks::Lock as RawLock;

/// A granted lock, held until the guard is released or dropped (see
/// [`crate::Guard`]).
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct Guard {
    raw: RawLock,
}

impl Guard {
    pub(crate) fn from_raw(raw: RawLock) -> Self {
        Self { raw }
    }

    /// A pollable ready once this guard is no longer held (suspended, lost or
    /// released), without asking: the host wakes it. Wait on it with
    /// `wasip2::io::poll::poll` beside timers and streams; drop it before the
    /// guard.
    pub fn subscribe(&self) -> Pollable {
        self.raw.subscribe()
    }
}

crate::guard::guard_methods!(Guard);
