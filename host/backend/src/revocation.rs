//! Revocation: asking a lock's holders to give it up (Curator's `__REVOKE__`
//! protocol on ZooKeeper), and how a holder learns it was asked.
//!
//! Revocation is cooperative: the holder is told, the lock stays held until it
//! releases. Forcing is the embedder's choice (the runner's hold lease,
//! `wardlock run --max-hold`).

use tokio::sync::watch;

use crate::name::LockName;
use crate::{GrantId, Result};

/// The future [`super::Revocation::revoked`] returns: resolves once someone
/// asked the holder of a grant to give it up. It owns what it needs
/// (`'static`), like [`super::StatusChange`].
pub type Revoked = std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// The data Curator's `Revoker.attemptRevoke` writes into a holder's lock node,
/// and that Curator's revocable locks (and wardlock holders) watch for.
pub const REVOKE_MESSAGE: &[u8] = b"__REVOKE__";

/// A [`Revoked`] that never resolves: for grants nobody can revoke any more
/// (released, unknown) and backends without revocation.
pub fn never_revoked() -> Revoked {
    Box::pin(std::future::pending())
}

/// What a grant's revocation watch has seen (engine-neutral: ZooKeeper
/// watches the holder's node, etcd a marker key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The first read has not answered yet.
    Unknown,
    /// Read, not asked (yet).
    NotAsked,
    /// The node carries `__REVOKE__`: the holder was asked to give the lock up.
    Asked,
}

/// Whether the watch `seen` saw a request, waiting for its first read at most
/// `limit` (false when no answer came by then).
///
/// # Cancellation safety
/// Cancel safe: it only reads its own receiver of the watch.
pub async fn asked(mut seen: watch::Receiver<Seen>, limit: std::time::Duration) -> bool {
    let answered = tokio::time::timeout(limit, seen.wait_for(|s| *s != Seen::Unknown)).await;
    matches!(answered, Ok(Ok(s)) if *s == Seen::Asked)
}

/// Resolves once the watch `seen` sees a request; never if it ends first.
pub fn revoked(mut seen: watch::Receiver<Seen>) -> Revoked {
    Box::pin(async move {
        if seen.wait_for(|s| *s == Seen::Asked).await.is_err() {
            never_revoked().await;
        }
    })
}

/// Asking a lock's holders to give it up: a capability of a
/// [`LockSession`](crate::LockSession) ([`LockSession::revocation`](crate::LockSession::revocation)).
#[async_trait::async_trait]
pub trait Revocation: Send + Sync {
    /// Whether someone asked the holder of `grant` to give it up
    /// ([`Revocation::request_revocation`] from any session or host; on
    /// ZooKeeper also a Curator `Revoker.attemptRevoke` on the grant's node).
    /// Once true it stays true while the grant is held. False for a grant
    /// this session does not hold.
    ///
    /// On ZooKeeper the first call for a grant reads its node (one round
    /// trip, bounded by the session timeout; false if no answer came by
    /// then) and leaves a data watch on it, as [`Revocation::revoked`] does.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only observes (a watch it started keeps running for
    /// the grant's lifetime).
    async fn revocation_requested(&self, grant: GrantId) -> bool;

    /// Resolves once someone asked the holder of `grant` to give it up (at
    /// once if someone did already). Event driven, like
    /// [`LockSession::status_changed`](crate::LockSession::status_changed): the request itself wakes it (on
    /// ZooKeeper: a data watch on the grant's node). Never resolves for a
    /// grant this session does not hold, or after the grant ends.
    ///
    /// # Cancellation safety
    /// Cancel safe: the future only observes; dropping it changes nothing.
    fn revoked(&self, grant: GrantId) -> Revoked;

    /// Asks every current holder of the lock `name` to give it up: their
    /// [`Revocation::revocation_requested`] becomes true and their
    /// [`Revocation::revoked`] futures resolve. Returns how many holders were
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
    /// [`BackendError::Unavailable`](crate::BackendError::Unavailable) when the lock service failed or did not
    /// answer within its session timeout.
    ///
    /// # Cancellation safety
    /// Cancel safe: a dropped call may have asked some holders already (each
    /// request is complete on its own); nothing is left to clean up.
    async fn request_revocation(&self, name: &LockName) -> Result<u32>;
}
