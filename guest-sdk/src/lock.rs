//! Describing and acquiring a lock request.

use core::time::Duration;

use crate::bindings::wardlock::lock::locks;
use crate::guard::Guard;
use crate::{Error, Mode};

/// A request for a named lock: name, [`Mode`] and an optional timeout.
///
/// Building the request does not talk to the host; only
/// [`acquire`](Lock::acquire) and [`try_acquire`](Lock::try_acquire) do. A
/// `Lock` can be reused to acquire the same lock again and again.
///
/// ```no_run
/// use std::time::Duration;
/// use wardlock_guest::Lock;
///
/// let config = Lock::shared("config/app").timeout(Duration::from_millis(250));
/// let guard = config.acquire()?;
/// // ... read the configuration while no writer can change it ...
/// drop(guard);
/// # Ok::<(), wardlock_guest::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    name: String,
    mode: Mode,
    timeout: Option<Duration>,
}

impl Lock {
    /// Requests `name` exclusively (a write lock): no other holder, shared or
    /// exclusive, exists while the guard lives.
    ///
    /// ```no_run
    /// let guard = wardlock_guest::Lock::exclusive("db/migrations").acquire()?;
    /// # Ok::<(), wardlock_guest::Error>(())
    /// ```
    pub fn exclusive(name: impl Into<String>) -> Self {
        Self::new(name, Mode::Exclusive)
    }

    /// Requests `name` shared (a read lock): other shared holders may exist,
    /// exclusive ones may not.
    ///
    /// ```no_run
    /// let guard = wardlock_guest::Lock::shared("db/schema").acquire()?;
    /// # Ok::<(), wardlock_guest::Error>(())
    /// ```
    pub fn shared(name: impl Into<String>) -> Self {
        Self::new(name, Mode::Shared)
    }

    /// Requests `name` in `mode`; useful when the mode is decided at run time.
    pub fn new(name: impl Into<String>, mode: Mode) -> Self {
        Self {
            name: name.into(),
            mode,
            timeout: None,
        }
    }

    /// Gives up with [`Error::Timeout`] if the lock is not granted within
    /// `timeout`.
    ///
    /// Without a timeout [`acquire`](Lock::acquire) waits until the lock is
    /// granted or the instance's own deadline ends it. The host counts in
    /// whole milliseconds, so a timeout is rounded up to the next millisecond
    /// (never down: a non-zero timeout must not become "fail at once").
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The lock name this request is for.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The mode this request asks for.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The timeout in the host's whole milliseconds (rounded up).
    pub(crate) fn timeout_ms(&self) -> Option<u64> {
        self.timeout.map(duration_to_millis)
    }

    /// Waits until the lock is granted (or the timeout passes) and returns a
    /// guard holding it.
    ///
    /// # Errors
    /// [`Error::InvalidName`]; [`Error::Denied`] when this component is not
    /// granted the name; [`Error::Timeout`] when the timeout passes first;
    /// [`Error::WouldDeadlock`] for exclusive access to a name this instance
    /// holds only shared; [`Error::LimitExceeded`] at a per-instance limit;
    /// [`Error::Unavailable`] when the lock service fails. After an error
    /// nothing is held.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use wardlock_guest::{Error, Lock};
    ///
    /// match Lock::exclusive("reports").timeout(Duration::from_secs(1)).acquire() {
    ///     Ok(guard) => println!("token {}", guard.fencing_token()),
    ///     Err(Error::Timeout) => println!("busy, try later"),
    ///     Err(other) => return Err(other),
    /// }
    /// # Ok::<(), Error>(())
    /// ```
    pub fn acquire(&self) -> Result<Guard, Error> {
        let options = locks::Options {
            mode: self.mode.into(),
            timeout_ms: self.timeout_ms(),
        };
        let raw = locks::acquire(&self.name, options)?;
        Ok(Guard::from_raw(raw))
    }

    /// Takes the lock only if it can be granted without waiting.
    ///
    /// Returns `Ok(None)` when it is currently held in a conflicting way. The
    /// timeout, if any, does not apply.
    ///
    /// # Errors
    /// As [`acquire`](Lock::acquire), but for [`Error::Timeout`]: a lock held
    /// in a conflicting way is `Ok(None)`.
    ///
    /// ```no_run
    /// if let Some(guard) = wardlock_guest::Lock::exclusive("cron/cleanup").try_acquire()? {
    ///     // ... only one instance runs the cleanup ...
    ///     guard.release()?;
    /// }
    /// # Ok::<(), wardlock_guest::Error>(())
    /// ```
    pub fn try_acquire(&self) -> Result<Option<Guard>, Error> {
        let raw = locks::try_acquire(&self.name, self.mode.into())?;
        Ok(raw.map(Guard::from_raw))
    }
}

/// Converts a timeout to the host's whole milliseconds, rounding up and
/// saturating at `u64::MAX` (which is, in practice, "forever").
pub(crate) fn duration_to_millis(timeout: Duration) -> u64 {
    let millis = timeout.as_nanos().div_ceil(1_000_000);
    u64::try_from(millis).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_round_up_to_whole_milliseconds() {
        assert_eq!(duration_to_millis(Duration::ZERO), 0);
        assert_eq!(duration_to_millis(Duration::from_nanos(1)), 1);
        assert_eq!(duration_to_millis(Duration::from_millis(7)), 7);
        assert_eq!(duration_to_millis(Duration::from_micros(7_001)), 8);
        assert_eq!(duration_to_millis(Duration::MAX), u64::MAX);
    }

    #[test]
    fn builder_keeps_name_and_mode() {
        let lock = Lock::shared("a/b").timeout(Duration::from_secs(1));
        assert_eq!(lock.name(), "a/b");
        assert_eq!(lock.mode(), Mode::Shared);
        assert_eq!(Lock::exclusive("x").mode(), Mode::Exclusive);
    }
}
