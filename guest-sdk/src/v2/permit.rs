//! Counting semaphores: a [`Permit`] is one of a semaphore's `n` permits,
//! held until it is released or dropped.

use core::time::Duration;

use super::Subscription;

use super::bindings::wardlock::lock::locks;
use crate::{Error, Status};

/// One permit of a counting semaphore: at most `permits` holders of a name at
/// once, across instances and hosts (on ZooKeeper, Curator's
/// `InterProcessSemaphoreV2` layout, so Java services share the semaphore).
///
/// Dropping the permit releases it; so does the instance's end, whatever ends
/// it. Permits are not re-entrant: every [`acquire_permit`] takes one more,
/// and each counts as a guard against the instance's handle cap.
///
/// ```no_run
/// use std::time::Duration;
/// use wardlock_guest::v2::acquire_permit;
///
/// // At most 3 instances talk to the slow service at once.
/// let permit = acquire_permit("services/slow", 3, Some(Duration::from_secs(5)))?;
/// println!("slot taken, token {}", permit.fencing_token());
/// permit.release()?; // or let it drop
/// # Ok::<(), wardlock_guest::Error>(())
/// ```
#[must_use = "the permit is released as soon as it is dropped"]
pub struct Permit {
    raw: locks::Permit,
}

crate::shared::permit_accessors!(Permit);

impl Permit {
    /// A pollable ready once the permit is no longer held (suspended, lost or
    /// released), woken by the host; wait on it with
    /// `wasip2::io::poll::poll` beside timers and streams. It borrows the
    /// permit, so it cannot outlive it.
    pub fn subscribe(&self) -> Subscription<'_> {
        Subscription::new(self.raw.subscribe(), self)
    }

    /// Releases the permit now and reports whether it was still held.
    ///
    /// # Errors
    /// [`Error::Lost`] if the permit had been lost (work done under it may
    /// have overlapped more holders than the semaphore allows);
    /// [`Error::Released`] if released already.
    pub fn release(self) -> Result<(), Error> {
        self.raw.release()?;
        Ok(())
    }
}

/// Shows the semaphore's name, permit count and the fencing token (queried
/// from the host).
impl core::fmt::Debug for Permit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Permit")
            .field("name", &self.name())
            .field("permits", &self.permits())
            .field("fencing_token", &self.fencing_token())
            .finish()
    }
}

/// Waits until one of the `permits` permits of semaphore `name` is granted
/// (waiters are served in arrival order), or `timeout` passes (`None` waits
/// until granted).
///
/// # Errors
/// [`Error::InvalidRequest`] for 0 permits, or (in-memory backend) a count
/// other than the one the semaphore's holders and waiters use, or a name in
/// use as a lock; [`Error::InvalidName`] / [`Error::Denied`] as for locks;
/// [`Error::LimitExceeded`] at the instance's handle cap;
/// [`Error::Timeout`]; [`Error::Unavailable`].
pub fn acquire_permit(
    name: &str,
    permits: u32,
    timeout: Option<Duration>,
) -> Result<Permit, Error> {
    let timeout_ms = timeout.map(crate::lock::duration_to_millis);
    let raw = locks::acquire_permit(name, permits, timeout_ms)?;
    Ok(Permit { raw })
}

/// Takes a permit of semaphore `name` only if that needs no waiting; `None`
/// when all `permits` are held (or others wait first).
///
/// # Errors
/// As [`acquire_permit`], without [`Error::Timeout`].
pub fn try_acquire_permit(name: &str, permits: u32) -> Result<Option<Permit>, Error> {
    Ok(locks::try_acquire_permit(name, permits)?.map(|raw| Permit { raw }))
}
