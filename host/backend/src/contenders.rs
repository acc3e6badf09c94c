//! Who holds a lock and who waits for it, as a session sees it: the answer of
//! [`Contention::contenders`](super::Contention::contenders), which guests
//! read through WIT 0.2.1's `contenders` (kazoo's `Lock.contenders()`,
//! Curator's `getParticipantNodes`).

use super::Mode;
use crate::Result;
use crate::name::LockName;

/// The most contenders one answer lists, whatever the caller asks for: a
/// guest cannot make the host read (or copy into its memory) an unbounded
/// queue.
pub const MAX_LISTED_CONTENDERS: u32 = 1024;

/// One holder or waiter of a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contender {
    /// Who it is, as the lock service records it: the owner label of a
    /// session (memory: the session's owner; ZooKeeper: its node's data, the
    /// host and the owner for wardlock's nodes, what a foreign client wrote
    /// for theirs; etcd: the lease, as `lease <hex>`). May be empty.
    pub owner: String,
    /// The mode it holds or asks for (a foreign exclusive lock is exclusive).
    pub mode: Mode,
    /// True for a holder, false for a waiter.
    pub holds: bool,
    /// A holder's fencing token, where the lock service can tell it after
    /// the grant (memory; etcd: the key's create revision); `None` for
    /// waiters and on ZooKeeper, whose tokens depend on the listing that
    /// granted them.
    pub token: Option<u64>,
    /// Where it is in the lock service, for people reading `wardlock status`:
    /// the ZooKeeper node's name, the etcd key; `None` where a contender has
    /// no name of its own (memory).
    pub node: Option<String>,
}

/// The contenders of one lock, in queue order: holders first, then waiters
/// in arrival order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contenders {
    /// At most the asked-for number of contenders, from the head of the queue.
    pub listed: Vec<Contender>,
    /// How many contenders the lock has in all (at least `listed.len()`).
    pub total: u32,
}

impl Contenders {
    /// The first `limit` of `all` (capped at [`MAX_LISTED_CONTENDERS`]), and
    /// their count.
    pub fn head(all: impl ExactSizeIterator<Item = Contender>, limit: u32) -> Self {
        let total = u32::try_from(all.len()).unwrap_or(u32::MAX);
        let listed = all.take(listed_at_most(limit)).collect();
        Contenders { listed, total }
    }
}

/// How many contenders an answer lists when `limit` were asked for.
pub fn listed_at_most(limit: u32) -> usize {
    usize::try_from(limit.min(MAX_LISTED_CONTENDERS)).unwrap_or(usize::MAX)
}

/// Listing who holds a lock and who waits: a capability of a
/// [`LockSession`](crate::LockSession) ([`LockSession::contention`](crate::LockSession::contention)).
#[async_trait::async_trait]
pub trait Contention: Send + Sync {
    /// Who holds the lock `name` and who waits for it, in queue order
    /// (holders first): the first `limit` of them (at most
    /// [`MAX_LISTED_CONTENDERS`]) and how many there are in all. Empty when
    /// nobody holds or waits. Other hosts' and foreign clients' contenders
    /// are listed too, as the lock service has them.
    ///
    /// # Errors
    /// [`BackendError::Unavailable`](crate::BackendError::Unavailable) when the lock service failed or did not
    /// answer.
    ///
    /// # Cancellation safety
    /// Cancel safe: it only reads.
    async fn contenders(&self, name: &LockName, limit: u32) -> Result<Contenders>;
}
