//! A lock held through `wardlock:lock@0.3.0`.

use core::future::{Future, IntoFuture};
use core::pin::Pin;
use core::task::{Context, Poll};

use super::bindings::wardlock::lock::{locks, types};
use super::{Error, Mode, Status};

/// A held lock. Dropping it releases the lock (so does the instance's end).
#[derive(Debug)]
pub struct Guard {
    raw: locks::Lock,
    name: String,
    mode: Mode,
}

impl Guard {
    pub(super) fn from_raw(raw: locks::Lock, name: String, mode: Mode) -> Self {
        Guard { raw, name, mode }
    }

    /// The lock name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The mode it was asked for in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The fencing token: strictly greater than every earlier conflicting
    /// grant's. Hand it to the resources the lock protects.
    pub fn fencing_token(&self) -> u64 {
        self.raw.fencing_token()
    }

    /// What the guard guarantees now.
    pub fn status(&self) -> Status {
        self.raw.status().into()
    }

    /// `Ok` while the lock is held.
    ///
    /// # Errors
    /// [`Error::Lost`] once it was lost (or is suspended: work that must
    /// not run unprotected stops either way), [`Error::Released`].
    pub fn check(&self) -> Result<(), Error> {
        match self.status() {
            Status::Held => Ok(()),
            Status::Suspended | Status::Lost => Err(Error::Lost),
            Status::Released => Err(Error::Released),
        }
    }

    /// A future that completes once this lock is no longer held, with its
    /// status then (`Suspended`, `Lost` or `Released`). Race it against the
    /// work the lock protects (`select`) to stop the work when the lock
    /// goes. It does not borrow the guard.
    pub fn not_held(&self) -> NotHeld {
        NotHeld::new(Box::pin(self.raw.not_held().into_future()))
    }

    /// Releases the lock now.
    ///
    /// # Errors
    /// [`Error::Lost`] when it had been lost meanwhile.
    pub fn release(self) -> Result<(), Error> {
        Ok(self.raw.release()?)
    }

    /// A future that completes once someone asks this holder to give the
    /// lock up ([`super::request_revocation`] from any instance or host, or
    /// a Curator `Revoker`): at once if someone did already. The lock stays
    /// held: giving it up is the guest's choice. Race it against the work,
    /// as [`Guard::not_held`]; it never completes once the guard is gone.
    pub fn revoked(&self) -> Revoked {
        Revoked(Box::pin(self.raw.revoked().into_future()))
    }

    /// Whether someone asked this holder to give the lock up (false after
    /// a release or a loss). On ZooKeeper the first call reads the lock's
    /// node (one round trip).
    pub async fn revocation_requested(&self) -> bool {
        self.raw.revocation_requested().await
    }

    /// The raw handle, for the guarded store's calls.
    pub(super) fn raw(&self) -> &locks::Lock {
        &self.raw
    }
}

/// The future of [`Guard::revoked`].
pub struct Revoked(Pin<Box<dyn Future<Output = ()>>>);

impl Future for Revoked {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl core::fmt::Debug for Revoked {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Revoked")
    }
}

/// The future of [`Guard::not_held`] and [`super::Permit::not_held`].
pub struct NotHeld(Pin<Box<dyn Future<Output = types::Status>>>);

impl NotHeld {
    pub(super) fn new(status: Pin<Box<dyn Future<Output = types::Status>>>) -> Self {
        NotHeld(status)
    }
}

impl Future for NotHeld {
    type Output = Status;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Status> {
        self.0.as_mut().poll(cx).map(Status::from)
    }
}

impl core::fmt::Debug for NotHeld {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("NotHeld")
    }
}
