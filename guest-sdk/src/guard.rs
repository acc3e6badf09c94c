//! A held lock that is released when it goes out of scope.

use crate::bindings::wardlock::lock::locks::Lock as RawLock;

/// A granted lock, held until the guard is released or dropped.
///
/// Dropping the guard drops the underlying WIT `lock` resource, which makes
/// the host release the lock (or, for a re-entrant grant, this handle on it).
/// Use [`release`](Guard::release) instead when you want to know whether the
/// lock was still held at the end.
///
/// ```no_run
/// use wardlock_guest::{Lock, Status};
///
/// let guard = Lock::exclusive("ledger").acquire()?;
/// if guard.status() == Status::Held {
///     // ... write, tagging the write with guard.fencing_token() ...
/// }
/// guard.release()?; // or just let it drop
/// # Ok::<(), wardlock_guest::Error>(())
/// ```
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct Guard {
    raw: RawLock,
}

impl Guard {
    /// Wraps a handle obtained from the raw bindings so it gets the guard API.
    pub(crate) fn from_raw(raw: RawLock) -> Self {
        Self { raw }
    }
}

/// The methods and `Debug` of a guard over a raw `lock` resource `raw`, the
/// same in every version of the interface (`v2::Guard` uses them too).
macro_rules! guard_methods {
    ($guard:ident) => {
        impl $guard {
            /// The lock name as given when it was acquired.
            pub fn name(&self) -> String {
                self.raw.name()
            }

            /// The mode this guard was requested with.
            pub fn mode(&self) -> $crate::Mode {
                self.raw.mode().into()
            }

            /// A number strictly greater for every later grant of this name, across
            /// all instances and hosts sharing the backend.
            ///
            /// Pass it to the resource you protect so it can reject writes from a
            /// stale holder whose lock has been lost in the meantime.
            pub fn fencing_token(&self) -> u64 {
                self.raw.fencing_token()
            }

            /// What the guard currently guarantees; see [`Status`](crate::Status).
            pub fn status(&self) -> $crate::Status {
                self.raw.status().into()
            }

            /// `Ok` while the lock is safely held; otherwise why not, so a
            /// block of work can stop at its next step with `guard.check()?`
            /// instead of learning of a loss only at the end.
            ///
            /// # Errors
            /// [`Error::Lost`](crate::Error::Lost): taken away, another holder
            /// may own it; [`Error::Unavailable`](crate::Error::Unavailable):
            /// suspended (the host lost contact with the lock service; the
            /// lock may come back, or be lost); [`Error::Released`](crate::Error::Released).
            pub fn check(&self) -> Result<(), $crate::Error> {
                match self.status() {
                    $crate::Status::Held => Ok(()),
                    $crate::Status::Suspended => Err($crate::Error::Unavailable(
                        "the lock is suspended: the host lost contact with the lock service, so another holder may soon own it"
                            .into(),
                    )),
                    $crate::Status::Lost => Err($crate::Error::Lost),
                    $crate::Status::Released => Err($crate::Error::Released),
                }
            }

            /// Releases the lock now and reports whether it was still held.
            ///
            /// Returns [`Error::Lost`](crate::Error::Lost) if the lock had been lost
            /// before: work done under this guard may have overlapped another
            /// holder's.
            ///
            /// # Errors
            /// [`Error::Lost`](crate::Error::Lost), or
            /// [`Error::Released`](crate::Error::Released) if released already.
            pub fn release(self) -> Result<(), $crate::Error> {
                self.raw.release()?;
                Ok(())
            }
        }

        /// Shows the lock's name, mode and fencing token (queried from the host).
        impl core::fmt::Debug for $guard {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct("Guard")
                    .field("name", &self.name())
                    .field("mode", &self.mode())
                    .field("fencing_token", &self.fencing_token())
                    .finish()
            }
        }
    };
}

#[cfg(feature = "v2")]
pub(crate) use guard_methods;

guard_methods!(Guard);
