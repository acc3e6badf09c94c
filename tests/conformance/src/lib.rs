//! The conformance kit for wardlock lock engines.
//!
//! Every engine wardlock ships (memory, ZooKeeper, etcd) passes these checks,
//! and so must one of your own before guests lock on it: FIFO fairness,
//! shared and exclusive modes, fencing tokens, timeouts and cancelled waits
//! that leave nothing queued, a dropped session releasing everything, event-
//! driven status, and — through real guest components (`counter`,
//! `lockctl`) — exact counting, a trapping guest handing its lock over, and
//! the WIT semantics guests see. Semaphores, revocation, downgrade and the
//! list of a lock's contenders are
//! checked when the engine has them ([`Features`]); when it does not, the kit
//! checks it says so (`BackendError::Unsupported`).
//!
//! ```ignore
//! use std::sync::Arc;
//! use wardlock_conformance::{Features, Subject};
//!
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn my_engine_conforms() {
//!     let backend = MyBackend::new();
//!     let subject = Subject::new(Arc::new(backend.clone()), Arc::new(MyProbe(backend)))
//!         .features(Features::LOCKS_AND_DOWNGRADE);
//!     wardlock_conformance::all(&subject).await;
//! }
//! ```
//!
//! A [`Probe`] tells the kit how many contenders (holders and waiters) a lock
//! has, so checks wait for "queued" as an event instead of sleeping.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test library: a check fails by panicking, with its message, as a test does"
)]

mod guests;
mod probe;
mod suite;
mod support;

pub use guests::KitGuest;
pub use probe::{MemoryProbe, Probe};
pub use suite::{all, checks};
pub use support::{
    Acquired, TEST_WAIT_LIMIT, assert_success, hold, lines, name, run_instances, spawn_acquire,
    spawn_run, token_of,
};

use std::sync::Arc;

use wardlock_host::{LockBackend, MemoryBackend};

/// What an engine offers beyond exclusive and shared locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// `acquire_permit` and `try_acquire_permit`.
    pub semaphores: bool,
    /// `request_revocation`, `revocation_requested`, `revoked`.
    pub revocation: bool,
    /// `downgrade`.
    pub downgrade: bool,
    /// `contenders` (who holds a lock, who waits).
    pub contenders: bool,
    /// The guarded store (`guarded_get`, `guarded_put`, `guarded_delete`,
    /// `guarded_keys`).
    pub guarded: bool,
    /// Leader election (`campaign`, `proclaim`, `leader`, `leader_changed`).
    pub elections: bool,
}

impl Features {
    /// Everything (memory, ZooKeeper, etcd).
    pub const ALL: Features = Features {
        semaphores: true,
        revocation: true,
        downgrade: true,
        contenders: true,
        guarded: true,
        elections: true,
    };

    /// Locks and downgrade; no semaphores, no revocation, no contenders, no
    /// guarded store.
    pub const LOCKS_AND_DOWNGRADE: Features = Features {
        semaphores: false,
        revocation: false,
        downgrade: true,
        contenders: false,
        guarded: false,
        elections: false,
    };
}

/// An engine under test and a probe observing it.
pub struct Subject {
    /// The engine.
    pub backend: Arc<dyn LockBackend>,
    /// Observes its queues.
    pub probe: Arc<dyn Probe>,
    /// What it offers beyond locks.
    pub features: Features,
}

impl Subject {
    /// `backend`, observed by `probe`, offering every feature (change with
    /// [`Subject::features`]).
    pub fn new(backend: Arc<dyn LockBackend>, probe: Arc<dyn Probe>) -> Self {
        Subject {
            backend,
            probe,
            features: Features::ALL,
        }
    }

    /// This subject, offering `features`.
    pub fn features(self, features: Features) -> Self {
        Subject { features, ..self }
    }

    /// A fresh in-memory backend and its probe.
    pub fn memory() -> Subject {
        let backend = MemoryBackend::new();
        Subject::new(Arc::new(backend.clone()), Arc::new(MemoryProbe(backend)))
    }
}
