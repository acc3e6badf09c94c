//! The conformance kit for wardlock lock engines.
//!
//! Every engine wardlock ships (memory, ZooKeeper, etcd, PostgreSQL) passes these checks,
//! and so must one of your own before guests lock on it: FIFO fairness,
//! shared and exclusive modes, fencing tokens, timeouts and cancelled waits
//! that leave nothing queued, a dropped session releasing everything, event-
//! driven status, and — through real guest components (`counter`,
//! `lockctl`, `lockctl3`; feature `guests`) — exact counting (a WASI 0.3
//! guest beside 0.2.2 ones included), a trapping guest handing its lock
//! over, the WIT semantics guests see, and a 0.3 guest's cancelled wait and
//! pending calls leaving nothing behind. Semaphores, revocation,
//! downgrade, the list of a lock's contenders, the guarded store and leader
//! election are checked when the engine has them (its session's accessors
//! say so: [`Features`]); when it does not, the kit checks it says so
//! (`BackendError::Unsupported`).
//!
//! # Using it for your engine
//!
//! An engine is a [`LockBackend`] of
//! `wardlock-backend`, the engine toolkit; the native checks need nothing
//! else. Add the kit as a dev-dependency as it comes (its `guests` feature,
//! off by default, brings `wardlock-host` and wasmtime in, to run guest
//! components on your engine):
//!
//! ```toml
//! [dev-dependencies]
//! wardlock-conformance = "0.1"
//! tokio = { version = "1", features = ["macros", "rt-multi-thread", "time"] }
//! async-trait = "0.1"
//! ```
//!
//! Then give the kit a [`Subject`]: your backend, a [`Probe`] (how many
//! holders and waiters a lock has: the checks wait for "queued" as an event
//! rather than sleeping). What your engine offers beyond exclusive and
//! shared locks the kit asks its sessions ([`Features`]). [`conformance_checks!`] names every check of
//! the kit, so one macro makes a test of each (a check added to a later kit
//! is a new test of yours without an edit); or run them all in one test with
//! [`all`], as against a real server, where one server serves every check:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use wardlock_backend::memory::MemoryBackend;
//! use wardlock_conformance::{Probe, Subject, TEST_WAIT_LIMIT, name};
//!
//! // Your engine; the toolkit's memory engine stands in for it here.
//! type MyBackend = MemoryBackend;
//!
//! /// Waits until a lock has `len` holders and waiters, as the engine counts
//! /// them (a real engine asks its service, or its host-local hand-off tasks:
//! /// `LocalLocks::contenders`).
//! struct MyProbe(MyBackend);
//!
//! #[async_trait::async_trait]
//! impl Probe for MyProbe {
//!     async fn wait_len(&self, lock: &str, len: usize) {
//!         let lock = name(lock);
//!         let deadline = tokio::time::Instant::now() + TEST_WAIT_LIMIT;
//!         while self.0.snapshot(&lock).len() != len {
//!             assert!(tokio::time::Instant::now() < deadline, "{lock} never had {len}");
//!             tokio::time::sleep(Duration::from_millis(1)).await;
//!         }
//!     }
//! }
//!
//! fn subject() -> Subject {
//!     let backend = MyBackend::new();
//!     // The kit asks the engine what it offers beyond locks (its sessions'
//!     // capability accessors) and checks it answers `Unsupported` for the rest.
//!     Subject::new(Arc::new(backend.clone()), Arc::new(MyProbe(backend)))
//! }
//!
//! // One test per check, from the kit's one list (in `tests/conformance.rs`).
//! macro_rules! kit_tests {
//!     ($($check:ident),* $(,)?) => {$(
//!         #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//!         async fn $check() {
//!             wardlock_conformance::checks::$check(&subject()).await;
//!         }
//!     )*};
//! }
//! wardlock_conformance::conformance_checks!(kit_tests);
//! # fn main() {
//! #     let runtime = tokio::runtime::Runtime::new().unwrap();
//! #     runtime.block_on(wardlock_conformance::checks::exclusive_excludes(&subject()));
//! #     runtime.block_on(wardlock_conformance::checks::grants_in_arrival_order(&subject()));
//! # }
//! ```
//!
//! `cargo test` then prints one line per check (`test exclusive_excludes ...
//! ok`); a check of a feature the engine lacks says on stderr that it was
//! skipped. Every check is bounded ([`Subject::check_limit`], [`CHECK_LIMIT`]
//! by default): one that runs past it fails naming the check, the engine, the
//! last wait it named and the lock service's state as
//! [`Subject::server_state`] dumps it, instead of hanging the test run. The helpers the checks use ([`hold`], [`spawn_acquire`],
//! [`name`], [`TEST_WAIT_LIMIT`]) are public, for an engine's own tests
//! beside the kit.
//!
//! # Features
//!
//! - `guests` (off by default): the checks through guest components, and
//!   `KitGuest` with the helpers that run guests. They need the three guests
//!   built for `wasm32-wasip2`: inside wardlock's repository the build script
//!   builds them (`plugins/build.sh`); elsewhere set
//!   `WARDLOCK_CONFORMANCE_GUESTS` to a directory holding `counter.wasm`,
//!   `lockctl.wasm` and `lockctl3.wasm`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a test library: a check fails by panicking, with its message, as a test does"
)]

mod bound;
#[cfg(feature = "guests")]
mod guests;
mod probe;
mod suite;
mod support;

pub use bound::{CHECK_LIMIT, StateDump};
#[cfg(feature = "guests")]
pub use guests::{KitGuest, assert_success, lines, run_instances, spawn_run};
pub use probe::{MemoryProbe, Probe};
pub use suite::{all, checks};
pub use support::{Acquired, TEST_WAIT_LIMIT, hold, name, spawn_acquire, token_of};

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use wardlock_backend::LockBackend;
use wardlock_backend::memory::MemoryBackend;

/// What an engine offers beyond exclusive and shared locks, as a session's
/// capability accessors answer ([`LockSession::semaphores`] …): the kit
/// asks the engine, nothing is declared. Downgrade, part of the core, is
/// found by trying it ([`Subject::downgrades`]).
///
/// [`LockSession::semaphores`]: wardlock_backend::LockSession::semaphores
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// Semaphore permits ([`LockSession::semaphores`](wardlock_backend::LockSession::semaphores)).
    pub semaphores: bool,
    /// Revocation ([`LockSession::revocation`](wardlock_backend::LockSession::revocation)).
    pub revocation: bool,
    /// Listing a lock's contenders ([`LockSession::contention`](wardlock_backend::LockSession::contention)).
    pub contenders: bool,
    /// The guarded store ([`GuardedStore::guarded_store`](wardlock_backend::GuardedStore::guarded_store)).
    pub guarded: bool,
    /// Leader election ([`LockSession::election`](wardlock_backend::LockSession::election)).
    pub elections: bool,
    /// The key-value store ([`LockSession::key_value`](wardlock_backend::LockSession::key_value)).
    pub key_value: bool,
}

impl Features {
    /// What a session of `backend` offers, as its accessors answer (opening
    /// a session does no I/O).
    pub fn of(backend: &dyn LockBackend) -> Features {
        let session = backend.open_session("conformance: features");
        Features {
            semaphores: session.semaphores().is_ok(),
            revocation: session.revocation().is_ok(),
            contenders: session.contention().is_ok(),
            guarded: session.guarded_store().is_ok(),
            elections: session.election().is_ok(),
            key_value: session.key_value().is_ok(),
        }
    }
}

/// An engine under test and a probe observing it.
pub struct Subject {
    /// The engine.
    pub backend: Arc<dyn LockBackend>,
    /// Observes its queues.
    pub probe: Arc<dyn Probe>,
    /// What it offers beyond locks, as its sessions answer.
    pub features: Features,
    /// Whether it downgrades, once tried.
    downgrades: std::sync::OnceLock<bool>,
    /// How long one check may take ([`CHECK_LIMIT`] unless set).
    check_limit: Duration,
    /// Dumps the lock service's state when a check runs out of time.
    server_state: Option<StateDump>,
    last_wait: bound::LastWait,
}

impl Subject {
    /// `backend`, observed by `probe`, its [`Features`] asked of it, each
    /// check bounded by [`CHECK_LIMIT`].
    pub fn new(backend: Arc<dyn LockBackend>, probe: Arc<dyn Probe>) -> Self {
        Subject {
            features: Features::of(&*backend),
            downgrades: std::sync::OnceLock::new(),
            backend,
            probe,
            check_limit: CHECK_LIMIT,
            server_state: None,
            last_wait: bound::LastWait::default(),
        }
    }

    /// Whether the engine downgrades (found once, by downgrading an
    /// exclusive grant of a lock of the kit's own, `conf/downgrade-probe`).
    ///
    /// # Panics
    /// When the probe's lock cannot be taken, as a check would.
    pub async fn downgrades(&self) -> bool {
        if let Some(known) = self.downgrades.get() {
            return *known;
        }
        let session = self.backend.open_session("conformance: downgrade probe");
        let lock = name("conf/downgrade-probe");
        let held = session
            .acquire(
                &lock,
                wardlock_backend::Mode::Exclusive,
                Some(TEST_WAIT_LIMIT),
            )
            .await
            .expect("the downgrade probe's lock");
        let downgraded = session.downgrade(held.id).await;
        let known = !matches!(
            downgraded,
            Err(wardlock_backend::BackendError::Unsupported(_))
        );
        drop(session);
        *self.downgrades.get_or_init(|| known)
    }

    /// This subject, each check failing once it has run for `limit`.
    pub fn check_limit(self, limit: Duration) -> Self {
        Subject {
            check_limit: limit,
            ..self
        }
    }

    /// This subject, with `dump` describing the lock service's state (its
    /// lock nodes or keys, `pg_locks`) in the message of a check that ran
    /// out of time.
    pub fn server_state<F, D>(self, dump: D) -> Self
    where
        D: Fn() -> F + Send + Sync + 'static,
        F: Future<Output = String> + Send + 'static,
    {
        let dump: StateDump = Arc::new(move || Box::pin(dump()));
        Subject {
            server_state: Some(dump),
            ..self
        }
    }

    /// Waits until `lock` has `len` contenders, through the probe, naming
    /// that wait for the check's bound.
    pub async fn wait_len(&self, lock: &str, len: usize) {
        self.waiting_for(format!("{len} contenders of `{lock}` (the probe)"));
        self.probe.wait_len(lock, len).await;
    }

    /// Names what the running check waits for now, for the message of its
    /// bound.
    pub fn waiting_for(&self, what: impl Into<String>) {
        self.last_wait.set(what.into());
    }

    /// A fresh in-memory backend and its probe.
    pub fn memory() -> Subject {
        let backend = MemoryBackend::new();
        Subject::new(Arc::new(backend.clone()), Arc::new(MemoryProbe(backend)))
    }
}
