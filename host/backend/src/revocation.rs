//! Revocation: asking a lock's holders to give it up (Curator's `__REVOKE__`
//! protocol on ZooKeeper), and how a holder learns it was asked.
//!
//! Revocation is cooperative: the holder is told, the lock stays held until it
//! releases. Forcing is the embedder's choice (the runner's hold lease,
//! `wardlock run --max-hold`).

use tokio::sync::watch;

/// The future [`super::LockSession::revoked`] returns: resolves once someone
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
