//! The engine toolkit of wardlock: what a lock service must provide
//! ([`LockBackend`], [`LockSession`]), lock names ([`name`]), the in-memory
//! engine ([`memory`], the embedded default), and what a remote engine is built
//! from: host-local hand-off ([`handoff`]), the session clock ([`liveness`]),
//! back-off ([`backoff`]) and TLS ([`tls`], [`tls_probe`]).
//!
//! Every engine implements these traits: the memory engine here, ZooKeeper
//! (`wardlock-zookeeper`) and etcd (`wardlock-etcd`) in crates of their own, and
//! engines written outside wardlock, which pass the conformance kit
//! (`wardlock-conformance`). The host (`wardlock-host`) calls them and names none.
//!
//! The traits are free of wasmtime types so an engine compiles, and is tested,
//! without the Wasm runtime. A backend hands out [`LockSession`]s; everything
//! acquired through a session belongs to it and is released when the session is
//! dropped. The host opens one session per guest instance, so a guest's locks
//! live exactly as long as the guest.

pub mod backoff;
mod contenders;
pub mod election;
mod error;
pub mod guarded;
pub mod handoff;
pub mod liveness;
pub mod memory;
pub mod name;
pub mod observe;
pub mod registry;
mod request;
pub mod revocation;
pub mod secret;
pub mod tls;
pub mod tls_probe;

use std::time::Duration;

use async_trait::async_trait;

pub use contenders::{Contender, Contenders, MAX_LISTED_CONTENDERS, listed_at_most};
pub use election::{Leader, LeaderChange};
pub use error::BackendError;
pub use guarded::{GuardedEntry, GuardedKey};
pub use memory::MemoryBackend;
pub use request::{Request, RequestKind};
pub use revocation::{REVOKE_MESSAGE, Revoked, never_revoked};

use crate::name::LockName;

/// How a lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// One holder at a time (a write lock).
    Exclusive,
    /// Many holders at once, excluded by exclusive holders (a read lock).
    Shared,
}

impl Mode {
    /// The lower-case name used in logs and output (`exclusive`, `shared`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Exclusive => "exclusive",
            Mode::Shared => "shared",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Identifies one grant within the session that obtained it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GrantId(pub u64);

/// A lock granted to a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The grant's identity within its session, for [`LockSession::release`].
    pub id: GrantId,
    /// Fencing token: strictly greater than the token of every earlier grant of
    /// the same name that conflicted with this one (an exclusive grant conflicts
    /// with every grant; two shared grants do not).
    pub token: u64,
}

/// What a grant currently guarantees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantStatus {
    /// Held: no conflicting holder exists.
    Held,
    /// Contact with the lock service is interrupted; the grant has not expired yet.
    Suspended,
    /// The grant was taken away (for example the backend session expired).
    Lost,
    /// The grant was released, or never existed in this session.
    Released,
}

/// The future [`LockSession::status_changed`] returns: a grant's new status.
/// It owns what it needs (`'static`): it neither borrows nor keeps alive the
/// session that made it.
pub type StatusChange = std::pin::Pin<Box<dyn Future<Output = GrantStatus> + Send + 'static>>;

/// The [`StatusChange`] of a status that cannot change any more (a released
/// grant, a lost one): resolves at once with `now` when it differs from `seen`,
/// never otherwise.
pub fn settled(now: GrantStatus, seen: GrantStatus) -> StatusChange {
    if now == seen {
        Box::pin(std::future::pending())
    } else {
        Box::pin(std::future::ready(now))
    }
}

/// A lock service. Implementations are shared by every guest instance of a host.
pub trait LockBackend: Send + Sync + 'static {
    /// Opens a session owned by `owner` (a human-readable description such as
    /// `plugin counter.wasm, instance 3`, kept for diagnostics).
    ///
    /// Opening is cheap and does no I/O: backends connect lazily.
    fn open_session(&self, owner: &str) -> Box<dyn LockSession>;

    /// Where lock `name` lives in the lock service, for people (`wardlock
    /// status`): a ZooKeeper path, the name `etcdctl lock` takes. `None` (the
    /// default) for an engine whose locks have no address outside the host.
    fn location(&self, name: &LockName) -> Option<String> {
        let _ = name;
        None
    }

    /// A short name for logs and summaries (`memory`, `zookeeper`, `etcd`).
    fn kind(&self) -> &'static str;

    /// Whether the backend can serve lock requests now (for health checks).
    fn health(&self) -> Health {
        Health::Connected
    }

    /// Ends the backend for good, at host shutdown, after every session is
    /// gone: finishes releases still in flight (bounded), then closes the
    /// connection to the lock service so whatever remains is freed at once.
    ///
    /// # Cancellation safety
    /// Cancel safe; a dropped shutdown leaves cleanup to the lock service
    /// (ZooKeeper: the session timeout; etcd: the lease's TTL).
    fn shutdown(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async {})
    }
}

/// A backend's connection to its lock service, as health checks see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// Connected: lock requests are served.
    Connected,
    /// Not connected now, but the session may still be recovered.
    Connecting,
    /// The session ended (expired or closed); a new one has not been made yet.
    Down,
}

/// A set of grants and waits that end together.
///
/// Dropping the session releases every grant it holds (in the background when that
/// needs I/O); dropping an [`LockSession::acquire`] future withdraws its wait.
#[async_trait]
pub trait LockSession: Send + Sync {
    /// Waits until `request` (a lock in a mode, or a semaphore permit) is
    /// granted, or until `timeout` passes. What backends implement; callers
    /// use [`LockSession::acquire`] and [`LockSession::acquire_permit`].
    ///
    /// # Errors
    /// [`BackendError::Timeout`] when `timeout` passed first;
    /// [`BackendError::Unavailable`] when the lock service failed;
    /// [`BackendError::Lost`] when the session ended while waiting;
    /// for permits, those of [`LockSession::acquire_permit`].
    ///
    /// # Cancellation safety
    /// Cancel safe: dropping the future before it completes leaves nothing queued
    /// and nothing held, even if the grant raced with the drop.
    async fn acquire_request(
        &self,
        request: Request<'_>,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError>;

    /// Grants `request` only if that needs no waiting; `Ok(None)` otherwise.
    /// What backends implement; callers use [`LockSession::try_acquire`] and
    /// [`LockSession::try_acquire_permit`].
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the lock service failed; for
    /// permits, those of [`LockSession::acquire_permit`] but `Timeout`.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`].
    async fn try_acquire_request(
        &self,
        request: Request<'_>,
    ) -> Result<Option<Grant>, BackendError>;

    /// Waits until `name` is granted in `mode`, or until `timeout` passes.
    ///
    /// # Errors
    /// [`BackendError::Timeout`] when `timeout` passed first;
    /// [`BackendError::Unavailable`] when the lock service failed;
    /// [`BackendError::Lost`] when the session ended while waiting.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`].
    async fn acquire(
        &self,
        name: &LockName,
        mode: Mode,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        self.acquire_request(Request::lock(name, mode), timeout)
            .await
    }

    /// Takes `name` in `mode` only if that needs no waiting; `Ok(None)` otherwise.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the lock service failed.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`].
    async fn try_acquire(
        &self,
        name: &LockName,
        mode: Mode,
    ) -> Result<Option<Grant>, BackendError> {
        self.try_acquire_request(Request::lock(name, mode)).await
    }

    /// Releases a grant. Returns without waiting for the lock service to confirm:
    /// a backend that needs I/O finishes (and retries) the release in the background.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `grant` is not held by this session.
    fn release(&self, grant: GrantId) -> Result<(), BackendError>;

    /// What `grant` currently guarantees.
    fn status(&self, grant: GrantId) -> GrantStatus;

    /// Resolves with `grant`'s status once it differs from `seen`; at once
    /// when it differs already (a grant this session does not hold is
    /// [`GrantStatus::Released`]).
    ///
    /// Event driven: the change itself wakes the future (a release, an
    /// injected fault, the backend noticing that its connection is suspended
    /// or its session lost), never a polling loop. It is how a guest's
    /// `lock.subscribe` learns that a lock stopped being held.
    ///
    /// # Cancellation safety
    /// Cancel safe: the future only observes; dropping it changes nothing.
    fn status_changed(&self, grant: GrantId, seen: GrantStatus) -> StatusChange;

    /// Downgrades: takes a shared grant of the name and at the queue position of
    /// `exclusive` (an exclusive grant this session holds), granted at once. Once
    /// `exclusive` is released, the shared grant lets other readers in and keeps
    /// every writer that queued meanwhile waiting.
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `exclusive` is not held here;
    /// [`BackendError::Lost`] when it was lost; [`BackendError::Unsupported`] when
    /// the backend cannot downgrade (the default).
    ///
    /// # Cancellation safety
    /// Cancel safe: a grant made for a dropped call is released with the session.
    async fn downgrade(&self, exclusive: GrantId) -> Result<Grant, BackendError> {
        let _ = exclusive;
        Err(BackendError::Unsupported(
            "this lock backend cannot downgrade".into(),
        ))
    }

    /// Waits until one of the `permits` permits of semaphore `name` is granted
    /// (at most `permits` holders at once, waiters served in arrival order),
    /// or until `timeout` passes.
    ///
    /// A permit is a [`Grant`] like a lock's: released by
    /// [`LockSession::release`] or with the session, reported by
    /// [`LockSession::status`] and [`LockSession::status_changed`]; it cannot
    /// be downgraded ([`BackendError::InvalidRequest`]). A
    /// semaphore's names are the locks' names: a name is used either as a lock
    /// or as a semaphore, never both at once.
    ///
    /// Fencing token: permits do not conflict with each other, so the lock
    /// rule gives nothing; instead a permit's token is strictly greater than
    /// the token of every permit of the same semaphore granted before it
    /// (memory: a backend-wide counter taken at grant; ZooKeeper: the `czxid`
    /// of the lease node, which is created under the semaphore's internal
    /// mutex, held until the lease is granted, so leases are created in grant
    /// order; this holds among clients that take the mutex, as Curator does).
    ///
    /// # Errors
    /// [`BackendError::InvalidRequest`] when `permits` is 0, or differs from
    /// the count the semaphore's current holders and waiters use (memory;
    /// ZooKeeper cannot see other clients' counts, as in Curator);
    /// [`BackendError::Timeout`] when `timeout` passed first;
    /// [`BackendError::Unavailable`] when the lock service failed;
    /// [`BackendError::Lost`] when the session ended while waiting;
    /// [`BackendError::Unsupported`] when the backend has no semaphores.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`]: dropping the future leaves
    /// nothing queued and nothing held (on ZooKeeper: no lease node and no
    /// internal mutex node).
    async fn acquire_permit(
        &self,
        name: &LockName,
        permits: u32,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        self.acquire_request(Request::permit(name, permits), timeout)
            .await
    }

    /// Takes a permit of semaphore `name` only if that needs no waiting;
    /// `Ok(None)` otherwise.
    ///
    /// # Errors
    /// As [`LockSession::acquire_permit`], without `Timeout`.
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_permit`].
    async fn try_acquire_permit(
        &self,
        name: &LockName,
        permits: u32,
    ) -> Result<Option<Grant>, BackendError> {
        self.try_acquire_request(Request::permit(name, permits))
            .await
    }

    /// Whether someone asked the holder of `grant` to give it up
    /// ([`LockSession::request_revocation`] from any session or host; on
    /// ZooKeeper also a Curator `Revoker.attemptRevoke` on the grant's node).
    /// Once true it stays true while the grant is held. False for a grant
    /// this session does not hold, and on backends without revocation (the
    /// default).
    ///
    /// On ZooKeeper the first call for a grant reads its node (one round
    /// trip, bounded by the session timeout; false if no answer came by
    /// then) and leaves a data watch on it, as [`LockSession::revoked`] does.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes (a watch it started keeps running for
    /// the grant's lifetime).
    async fn revocation_requested(&self, grant: GrantId) -> bool {
        let _ = grant;
        false
    }

    /// Resolves once someone asked the holder of `grant` to give it up (at
    /// once if someone did already). Event driven, like
    /// [`LockSession::status_changed`]: the request itself wakes it (on
    /// ZooKeeper: a data watch on the grant's node). Never resolves for a
    /// grant this session does not hold, after the grant ends, or on backends
    /// without revocation (the default).
    ///
    /// # Cancellation safety
    /// Cancel safe: the future only observes; dropping it changes nothing.
    fn revoked(&self, grant: GrantId) -> Revoked {
        let _ = grant;
        never_revoked()
    }

    /// Asks every current holder of the lock `name` to give it up: their
    /// [`LockSession::revocation_requested`] becomes true and their
    /// [`LockSession::revoked`] futures resolve. Returns how many holders were
    /// asked (0 when nobody holds `name`); waits for none of them to release.
    /// On ZooKeeper it writes `__REVOKE__` ([`REVOKE_MESSAGE`]) into each
    /// holder's node, as Curator's `Revoker` does, so other hosts' holders and
    /// Curator's revocable locks hear it too, and counts the nodes written: a
    /// node whose holder went meanwhile is not counted, and the holders of one
    /// host sharing a node through host-local hand-off count once (all of them
    /// are asked; the node takes no more local holders). A semaphore's permits are not lock holders
    /// and are never asked.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the lock service failed or did not
    /// answer within its session timeout; [`BackendError::Unsupported`] when
    /// the backend has no revocation (the default).
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped call may have asked some holders already (each
    /// request is complete on its own); nothing is left to clean up.
    async fn request_revocation(&self, name: &LockName) -> Result<u32, BackendError> {
        let _ = name;
        Err(BackendError::Unsupported(
            "this lock backend has no revocation".into(),
        ))
    }

    /// Who holds the lock `name` and who waits for it, in queue order
    /// (holders first): the first `limit` of them (at most
    /// [`MAX_LISTED_CONTENDERS`]) and how many there are in all. Empty when
    /// nobody holds or waits. Other hosts' and foreign clients' contenders
    /// are listed too, as the lock service has them.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the lock service failed or did not
    /// answer; [`BackendError::Unsupported`] when the backend cannot list a
    /// lock's contenders (the default).
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders, BackendError> {
        let _ = (name, limit);
        Err(BackendError::Unsupported(
            "this lock backend cannot list a lock's contenders".into(),
        ))
    }

    /// The entry `key` of lock `name`'s guarded store ([`guarded`]), if
    /// any. Reading needs no grant; a reader that does not hold `name` sees
    /// a snapshot that may be out of date as soon as it is returned.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`] when the lock service failed or did not
    /// answer; [`BackendError::Unsupported`] when the backend has no guarded
    /// store (the default).
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn guarded_get(
        &self,
        name: &LockName,
        key: &GuardedKey,
    ) -> Result<Option<GuardedEntry>, BackendError> {
        let _ = (name, key);
        Err(no_guarded_store())
    }

    /// Writes `value` under `key` in the guarded store of the lock `holder`
    /// holds, in one atomic operation on the engine that commits only if
    /// `holder` (an exclusive grant of this session) still stands there: its
    /// node or key exists in the session it was granted in, and, under
    /// host-local hand-off, the local grant is still this session's. The
    /// entry records `holder`'s fencing token. Returns the write's revision
    /// ([`GuardedEntry::revision`]).
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `holder` is not held by this
    /// session (released); [`BackendError::Lost`] when its grant no longer
    /// stands on the engine (nothing was written);
    /// [`BackendError::InvalidRequest`] when `holder` is a shared grant or a
    /// permit; [`BackendError::LimitExceeded`] for a value above
    /// [`guarded::MAX_VALUE_BYTES`]; [`BackendError::Unavailable`] when the
    /// lock service failed or did not answer (the write may or may not have
    /// committed, as with any write whose answer is lost);
    /// [`BackendError::Unsupported`] without a guarded store (the default).
    ///
    /// # Cancellation safety
    /// A dropped call may still commit, once, if its request already left:
    /// and then only while `holder` stood on the engine.
    async fn guarded_put(
        &self,
        holder: GrantId,
        key: &GuardedKey,
        value: &[u8],
    ) -> Result<u64, BackendError> {
        let _ = (holder, key, value);
        Err(no_guarded_store())
    }

    /// Deletes `key` from the guarded store of the lock `holder` holds, under
    /// the rules of [`LockSession::guarded_put`]: true when there was an
    /// entry. A store left empty leaves nothing behind on the engine.
    ///
    /// # Errors
    /// As [`LockSession::guarded_put`], without `LimitExceeded`.
    ///
    /// # Cancellation safety
    /// As [`LockSession::guarded_put`].
    async fn guarded_delete(
        &self,
        holder: GrantId,
        key: &GuardedKey,
    ) -> Result<bool, BackendError> {
        let _ = (holder, key);
        Err(no_guarded_store())
    }

    /// The keys of lock `name`'s guarded store that start with `prefix`,
    /// sorted, at most `limit` (and [`guarded::MAX_LISTED_KEYS`]).
    ///
    /// # Errors
    /// As [`LockSession::guarded_get`].
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn guarded_keys(
        &self,
        name: &LockName,
        prefix: &str,
        limit: u32,
    ) -> Result<Vec<String>, BackendError> {
        let _ = (name, prefix, limit);
        Err(no_guarded_store())
    }

    /// Campaigns for election `name` with `value` (see [`election`]): waits
    /// until this candidate leads, or until `timeout` passes. The leadership
    /// is a [`Grant`] of this session (its token is the term): released by
    /// [`LockSession::release`] (resigning) or with the session, reported by
    /// [`LockSession::status`] and [`LockSession::status_changed`] under the
    /// loss rules of a lock, and an exclusive holder for guarded writes.
    ///
    /// # Errors
    /// [`BackendError::Timeout`]; [`BackendError::Unavailable`];
    /// [`BackendError::Lost`] when the session ended while waiting;
    /// [`BackendError::LimitExceeded`] for a value above
    /// [`election::MAX_VALUE_BYTES`]; [`BackendError::Unsupported`] without
    /// elections (the default).
    ///
    /// # Cancellation safety
    /// Cancel safe, as [`LockSession::acquire_request`]: a dropped campaign
    /// leaves no candidate behind.
    async fn campaign(
        &self,
        name: &LockName,
        value: &str,
        timeout: Option<Duration>,
    ) -> Result<Grant, BackendError> {
        let _ = (name, value, timeout);
        Err(election::no_elections())
    }

    /// Replaces the value the leadership `leadership` proclaims, only while
    /// it leads (on etcd a put guarded by the leader key's create revision,
    /// as `Proclaim`; on ZooKeeper the latch node's data — which wakes a
    /// Curator 5 `LeaderLatch` waiting right behind the leader without its
    /// re-arming its watch: see docs/election.md).
    ///
    /// # Errors
    /// [`BackendError::UnknownGrant`] when `leadership` is not held here;
    /// [`BackendError::Lost`] when it no longer leads; `LimitExceeded`,
    /// `Unavailable`, `Unsupported` as for [`LockSession::campaign`];
    /// [`BackendError::InvalidRequest`] for a grant that is no leadership.
    ///
    /// # Cancellation safety
    /// A dropped call may still have proclaimed the value.
    async fn proclaim(&self, leadership: GrantId, value: &str) -> Result<(), BackendError> {
        let _ = (leadership, value);
        Err(election::no_elections())
    }

    /// Who leads election `name` now (`None`: nobody campaigns). Other
    /// hosts' and foreign clients' candidates count (Curator's
    /// `LeaderLatch`, `etcdctl elect`).
    ///
    /// # Errors
    /// [`BackendError::Unavailable`]; [`BackendError::Unsupported`] without
    /// elections (the default).
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn leader(&self, name: &LockName) -> Result<Option<Leader>, BackendError> {
        let _ = name;
        Err(election::no_elections())
    }

    /// Resolves with election `name`'s leader once it differs from `seen`
    /// (another leader or term, another value, or nobody): at once if it
    /// differs already. Event driven: the change wakes it (a watch), never a
    /// polling loop.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes.
    fn leader_changed(&self, name: &LockName, seen: Option<Leader>) -> LeaderChange {
        let _ = (name, seen);
        Box::pin(std::future::ready(Err(election::no_elections())))
    }
}

/// The error of a backend without a guarded store.
fn no_guarded_store() -> BackendError {
    BackendError::Unsupported("this lock backend has no guarded store".into())
}

/// Rejects a semaphore request for zero permits.
///
/// # Errors
/// [`BackendError::InvalidRequest`] naming the count and the semaphore.
pub fn check_permits(name: &LockName, permits: u32) -> Result<(), BackendError> {
    if permits == 0 {
        return Err(BackendError::InvalidRequest(format!(
            "semaphore \"{name}\" asked for 0 permits; a semaphore needs at least 1"
        )));
    }
    Ok(())
}
