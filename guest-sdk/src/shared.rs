//! What the SDK's 0.2.2 and 0.3.0 APIs share, written once: the lock
//! request builder (a newtype over [`crate::v1::Lock`]) and the conversions
//! from each version's generated types (the same WIT types, generated twice).

/// The builder methods of a lock request newtype `$lock(crate::v1::Lock)`.
macro_rules! lock_request {
    ($lock:ident) => {
        impl $lock {
            /// Requests `name` exclusively (a write lock).
            pub fn exclusive(name: impl Into<String>) -> Self {
                $lock(crate::v1::Lock::exclusive(name))
            }

            /// Requests `name` shared (a read lock).
            pub fn shared(name: impl Into<String>) -> Self {
                $lock(crate::v1::Lock::shared(name))
            }

            /// Requests `name` in `mode`.
            pub fn new(name: impl Into<String>, mode: Mode) -> Self {
                $lock(crate::v1::Lock::new(name, mode))
            }

            /// Gives up with [`Error::Timeout`] after `timeout` (rounded up to
            /// whole milliseconds) of waiting.
            pub fn timeout(self, timeout: Duration) -> Self {
                $lock(self.0.timeout(timeout))
            }

            /// The lock name.
            pub fn name(&self) -> &str {
                self.0.name()
            }

            /// The mode asked for.
            pub fn mode(&self) -> Mode {
                self.0.mode()
            }

            /// This lock as one entry of an `acquire-many` request.
            fn request(&self) -> locks::Request {
                locks::Request {
                    name: self.name().to_string(),
                    mode: self.mode().into(),
                }
            }

            fn options(&self) -> locks::Options {
                locks::Options {
                    mode: self.mode().into(),
                    timeout_ms: self.0.timeout_ms(),
                }
            }
        }

        impl From<crate::v1::Lock> for $lock {
            fn from(lock: crate::v1::Lock) -> Self {
                $lock(lock)
            }
        }
    };
}

/// The read-only methods of a permit newtype `$permit { raw: locks::Permit }`.
macro_rules! permit_accessors {
    ($permit:ident) => {
        impl $permit {
            /// The semaphore name as given when the permit was acquired.
            pub fn name(&self) -> String {
                self.raw.name()
            }

            /// The semaphore's permit count as given when the permit was
            /// acquired.
            pub fn permits(&self) -> u32 {
                self.raw.permits()
            }

            /// Strictly greater than the token of every permit of this
            /// semaphore granted before this one (on ZooKeeper the lease
            /// node's `czxid`); hand it to the resource you protect.
            pub fn fencing_token(&self) -> u64 {
                self.raw.fencing_token()
            }

            /// What the permit currently guarantees; see [`Status`].
            pub fn status(&self) -> Status {
                self.raw.status().into()
            }
        }
    };
}

/// A leadership's accessors (a `$leadership` with a generated `raw`
/// leadership), its `Debug`, and the `From` of the generated `leader-info`
/// of `$election` as a [`crate::v2::election::LeaderInfo`].
macro_rules! leadership_accessors {
    ($leadership:ident, $election:ident) => {
        impl From<$election::LeaderInfo> for crate::v2::election::LeaderInfo {
            fn from(raw: $election::LeaderInfo) -> Self {
                crate::v2::election::LeaderInfo {
                    owner: raw.owner,
                    value: raw.value,
                    term: raw.term,
                }
            }
        }

        impl $leadership {
            /// The election's name.
            pub fn name(&self) -> String {
                self.raw.name()
            }

            /// The term: strictly greater than every earlier leader's (a
            /// fencing token to hand the resources the leader writes).
            pub fn term(&self) -> u64 {
                self.raw.term()
            }

            /// The value this leader proclaims now.
            pub fn value(&self) -> String {
                self.raw.value()
            }

            /// What the leadership guarantees now (`Held` while it leads).
            pub fn status(&self) -> Status {
                self.raw.status().into()
            }
        }

        impl core::fmt::Debug for $leadership {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct("Leadership")
                    .field("name", &self.name())
                    .field("term", &self.term())
                    .finish()
            }
        }
    };
}

/// `From` the generated `error`, `mode` and `status` of `$raw` (a version's
/// `types` module, 0.2.0 on), and a generated `lock-queue` of `$locks` as a
/// [`crate::v2::Queue`] (`queue_of`).
macro_rules! raw_conversions {
    ($raw:path, $locks:path) => {
        use $locks as raw_locks;
        use $raw as raw;

        impl From<raw::Error> for crate::Error {
            fn from(raw: raw::Error) -> Self {
                use crate::Error;
                match raw {
                    raw::Error::InvalidName(text) => Error::InvalidName(text),
                    raw::Error::Denied(text) => Error::Denied(text),
                    raw::Error::Timeout => Error::Timeout,
                    raw::Error::WouldDeadlock => Error::WouldDeadlock,
                    raw::Error::Lost => Error::Lost,
                    raw::Error::Released => Error::Released,
                    raw::Error::LimitExceeded(text) => Error::LimitExceeded(text),
                    raw::Error::Unavailable(text) => Error::Unavailable(text),
                    raw::Error::InvalidRequest(text) => Error::InvalidRequest(text),
                }
            }
        }

        impl From<crate::Mode> for raw::Mode {
            fn from(mode: crate::Mode) -> Self {
                match mode {
                    crate::Mode::Exclusive => raw::Mode::Exclusive,
                    crate::Mode::Shared => raw::Mode::Shared,
                }
            }
        }

        impl From<raw::Mode> for crate::Mode {
            fn from(mode: raw::Mode) -> Self {
                match mode {
                    raw::Mode::Exclusive => crate::Mode::Exclusive,
                    raw::Mode::Shared => crate::Mode::Shared,
                }
            }
        }

        impl From<raw::Status> for crate::Status {
            fn from(status: raw::Status) -> Self {
                match status {
                    raw::Status::Held => crate::Status::Held,
                    raw::Status::Suspended => crate::Status::Suspended,
                    raw::Status::Lost => crate::Status::Lost,
                    raw::Status::Released => crate::Status::Released,
                }
            }
        }

        /// A generated `lock-queue` as a [`crate::v2::Queue`].
        pub(crate) fn queue_of(raw: raw_locks::LockQueue) -> crate::v2::Queue {
            crate::v2::Queue {
                contenders: raw
                    .contenders
                    .into_iter()
                    .map(|c| crate::v2::Contender {
                        owner: c.owner,
                        mode: c.mode.into(),
                        holds: c.holds,
                        fencing_token: c.fencing_token,
                    })
                    .collect(),
                total: raw.total,
            }
        }
    };
}

pub(crate) use {leadership_accessors, lock_request, permit_accessors, raw_conversions};
