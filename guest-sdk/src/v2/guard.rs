//! A held lock of the 0.2.0 interface: the crate's [`crate::v1::Guard`] plus
//! [`Guard::subscribe`] and revocation ([`Guard::revocation_requested`],
//! [`Guard::subscribe_revocation`]).

use super::Subscription;
use super::bindings::wardlock::lock::locks::Lock as RawLock;

/// A granted lock, held until the guard is released or dropped (see
/// [`crate::v1::Guard`]).
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct Guard {
    pub(super) raw: RawLock,
}

impl Guard {
    pub(crate) fn from_raw(raw: RawLock) -> Self {
        Self { raw }
    }

    /// A pollable ready once this guard is no longer held (suspended, lost or
    /// released), without asking: the host wakes it. Wait on it with
    /// `wasip2::io::poll::poll` beside timers and streams. It borrows the
    /// guard, so it cannot outlive it.
    pub fn subscribe(&self) -> Subscription<'_> {
        Subscription::new(self.raw.subscribe(), self)
    }

    /// Whether someone asked this holder to give the lock up
    /// ([`super::request_revocation`] from any guest or host, or a Curator
    /// `Revoker.attemptRevoke` on its node). The lock stays held: giving it
    /// up (dropping or releasing the guard) is the guest's choice.
    pub fn revocation_requested(&self) -> bool {
        self.raw.revocation_requested()
    }

    /// A pollable ready once [`Guard::revocation_requested`] is true (at once
    /// if it is already), without asking: the host wakes it. It borrows the
    /// guard.
    pub fn subscribe_revocation(&self) -> Subscription<'_> {
        Subscription::new(self.raw.subscribe_revocation(), self)
    }
}

crate::guard::guard_methods!(Guard);
