//! Counting semaphores through `wardlock:lock@0.3.0`: a [`Permit`] is one of
//! a semaphore's `n` permits, awaited ([`acquire_permit`]) and held until it
//! is released or dropped.

use core::future::IntoFuture;
use core::time::Duration;

use super::bindings::wardlock::lock::locks;
use super::{Error, NotHeld, Status};

/// One permit of a counting semaphore: at most `permits` holders of a name
/// at once, across instances and hosts (0.2.2's semaphores, awaited).
/// Dropping it releases it; so does the instance's end. Permits are not
/// re-entrant, and each counts as a guard against the instance's handle cap.
#[derive(Debug)]
#[must_use = "the permit is released as soon as it is dropped"]
pub struct Permit {
    raw: locks::Permit,
}

crate::shared::permit_accessors!(Permit);

impl Permit {
    /// A future that completes once the permit is no longer held, with its
    /// status then (as [`super::Guard::not_held`]).
    pub fn not_held(&self) -> NotHeld {
        NotHeld::new(Box::pin(self.raw.not_held().into_future()))
    }

    /// Releases the permit now.
    ///
    /// # Errors
    /// [`Error::Lost`] when it had been lost meanwhile.
    pub fn release(self) -> Result<(), Error> {
        Ok(self.raw.release()?)
    }
}

/// Waits for one of the `permits` permits of semaphore `name` (at most
/// `timeout`; `None` waits until granted). The request queues when the
/// future is first polled; dropping the future withdraws it.
///
/// # Errors
/// [`Error::InvalidRequest`] for 0 permits or a name this instance holds as
/// a lock; [`Error::InvalidName`], [`Error::Denied`],
/// [`Error::LimitExceeded`], [`Error::Timeout`], [`Error::Unavailable`].
pub async fn acquire_permit(
    name: &str,
    permits: u32,
    timeout: Option<Duration>,
) -> Result<Permit, Error> {
    let timeout_ms = timeout.map(crate::lock::duration_to_millis);
    let raw = locks::acquire_permit(name.to_string(), permits, timeout_ms).await?;
    Ok(Permit { raw })
}

/// Takes a permit of semaphore `name` only if no waiting for other holders
/// is needed; `None` otherwise.
///
/// # Errors
/// As [`acquire_permit`], without [`Error::Timeout`].
pub async fn try_acquire_permit(name: &str, permits: u32) -> Result<Option<Permit>, Error> {
    let raw = locks::try_acquire_permit(name.to_string(), permits).await?;
    Ok(raw.map(|raw| Permit { raw }))
}
