//! Who holds a lock and who waits, as the in-memory backend has them
//! ([`Contention::contenders`](crate::Contention::contenders)).

use super::State;
use crate::name::LockName;
use crate::{Contender, Contenders};

impl State {
    /// The contenders of lock `name`, holders first; none for a name unused
    /// or used as a semaphore (a semaphore's permits are not a lock's
    /// contenders, as on the remote engines).
    pub(super) fn contenders(&self, name: &LockName, limit: u32) -> Contenders {
        let Some(queue) = self.queues.get(name).filter(|q| q.permits().is_none()) else {
            return Contenders::default();
        };
        let mut all: Vec<Contender> = queue
            .entries()
            .map(|entry| Contender {
                owner: self.owners.get(&entry.session).cloned().unwrap_or_default(),
                mode: entry.mode,
                holds: entry.token.is_some(),
                token: entry.token,
                node: None,
            })
            .collect();
        // Holders form the head of a fair queue already; a stable sort keeps
        // that true whatever a downgrade did, and keeps arrival order.
        all.sort_by_key(|c| !c.holds);
        Contenders::head(all.into_iter(), limit)
    }
}
