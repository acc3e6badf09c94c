//! Leader election on the in-memory engine ([`crate::election`]):
//! each election is an exclusive queue of its own, kept beside the locks'
//! under an internal name (`%election/NAME`, which no lock name can be), so
//! an election and a lock of one name never meet (as Curator's `LeaderLatch`
//! and its locks do not on ZooKeeper). A candidate is a request of that
//! queue with its value; the leader is the holder; its token is the term.

use super::State;
use crate::name::LockName;
use crate::{BackendError, Leader};

/// The room of election queues.
const ROOM: &str = "election";

/// The internal queue of election `name`.
pub(super) fn election_queue(name: &LockName) -> LockName {
    LockName::internal(ROOM, name)
}

/// The name whose guarded store a grant of queue `queue` writes: an
/// election's own name for a leadership, the lock's for a lock.
pub(super) fn store_name(queue: &LockName) -> LockName {
    queue.strip_internal(ROOM).unwrap_or_else(|| queue.clone())
}

/// Whether grant queue `queue` is an election's.
pub(super) fn is_election(queue: &LockName) -> bool {
    queue.strip_internal(ROOM).is_some()
}

impl State {
    /// Who leads election `name`: its queue's holder, with the value it
    /// proclaimed.
    pub(super) fn leader(&self, name: &LockName) -> Option<Leader> {
        let queue = self.queues.get(&election_queue(name))?;
        let holder = queue.entries().find(|e| e.token.is_some())?;
        Some(Leader {
            owner: self
                .owners
                .get(&holder.session)
                .cloned()
                .unwrap_or_default(),
            value: self.candidates.get(&holder.id).cloned().unwrap_or_default(),
            term: holder.token?,
        })
    }

    /// Replaces the value of candidate `id` of `queue` while it leads.
    pub(super) fn proclaim(
        &mut self,
        queue: &LockName,
        id: u64,
        value: &str,
    ) -> Result<(), BackendError> {
        if !is_election(queue) {
            return Err(BackendError::InvalidRequest(format!(
                "\"{queue}\" is a lock, not a leadership: only a leader proclaims"
            )));
        }
        let leads = self
            .queues
            .get(queue)
            .and_then(|q| q.get(id))
            .is_some_and(|e| e.token.is_some())
            && !self.lost.contains(&id);
        if !leads {
            return Err(BackendError::Lost);
        }
        self.candidates.insert(id, value.to_owned());
        Ok(())
    }
}
