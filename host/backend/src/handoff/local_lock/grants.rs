//! The grant rules of a host-local lock: who goes next locally, the fairness
//! bound, when the node goes, when it is queued for, when to watch for remote
//! contenders.

use tokio::time::Instant;

use super::super::node::SessionHealth;
use super::{Acquiring, LockState, NodeRequest};
use crate::Mode;

impl LockState {
    /// Grants what can be granted, applies the bounds, releases or acquires the
    /// node, starts or stops the watch for remote contenders.
    pub(super) fn settle(&mut self) {
        self.waiters.retain(|w| !w.reply.is_closed());
        if self.waiters.is_empty() {
            // Nobody wants the node any more: a dropped acquisition leaves
            // nothing queued (the recipe is cancel safe).
            self.acquiring = None;
        }
        self.apply_fairness_bound();
        self.grant_local();
        let nobody = self.holders.is_empty() && self.waiters.is_empty();
        if let Some(node) = &mut self.node {
            let linger_over = node
                .idle_since
                .is_some_and(|since| since.elapsed() >= self.limits.linger);
            let locks = self.engine.local_locks();
            let mut release = (node.draining && self.holders.is_empty())
                || (nobody && (linger_over || !node.may_cache(self.limits.linger, locks)));
            if !release && nobody && node.idle_since.is_none() {
                // Cached from now on, if the host's cache has room.
                if locks.try_cache() {
                    node.idle_since = Some(Instant::now());
                } else {
                    release = true;
                }
            } else if !nobody {
                node.leave_cache(locks);
            }
            if release {
                self.release_node();
            }
        }
        if self.node.is_none()
            && self.acquiring.is_none()
            && let Some(head) = self.waiters.front()
        {
            let deadline = self
                .waiters
                .iter()
                .map(|w| w.deadline)
                .try_fold(Instant::now(), |latest, d| d.map(|d| latest.max(d)));
            self.start_acquiring(head.mode, true, deadline);
        }
        self.watch_if_needed();
    }

    /// Caches the node at once, as `settle` would once nobody holds or
    /// waits: when the host caches locks, no other host waits for the node,
    /// and the host's cache has room (`release_here` calls it, so that the
    /// host's next acquire is granted in place; `settle` then finds it
    /// cached).
    pub(super) fn cache_idle_node(&mut self) {
        let locks = self.engine.local_locks();
        let Some(node) = &mut self.node else {
            return;
        };
        if node.idle_since.is_none()
            && node.may_cache(self.limits.linger, locks)
            && locks.try_cache()
        {
            node.idle_since = Some(Instant::now());
        }
    }

    pub(super) fn apply_fairness_bound(&mut self) {
        if let Some(node) = &mut self.node
            && let Some((since, granted)) = node.remote
            && (granted >= self.limits.max_handoffs || since.elapsed() >= self.limits.max_time)
        {
            node.draining = true;
        }
    }

    /// True when a request in `mode` fits beside the current holders under the
    /// node.
    pub(super) fn grantable(&self, mode: Mode) -> bool {
        let Some(node) = &self.node else {
            return false;
        };
        // A grant made while contact is interrupted would be `suspended` from
        // its first moment; the ZooKeeper recipe would not grant then either.
        if node.draining || node.session.health() != SessionHealth::Live {
            return false;
        }
        self.fits(mode)
    }

    /// True when a request in `mode` fits beside the current holders under
    /// the host's node, whatever the node's session says (see
    /// [`LockState::grantable`]); false without a node.
    pub(super) fn fits(&self, mode: Mode) -> bool {
        let Some(node) = &self.node else {
            return false;
        };
        match (node.mode, mode) {
            (Mode::Exclusive, Mode::Exclusive) => self.holders.is_empty(),
            (_, Mode::Shared) => self.holders.values().all(|m| *m == Mode::Shared),
            (Mode::Shared, Mode::Exclusive) => false,
        }
    }

    /// Hands the grant to waiters at the head of the queue, in order, while
    /// they fit.
    pub(super) fn grant_local(&mut self) {
        loop {
            // The time bound may have passed while the last holder held: no
            // grant after it (checking only after a grant let one more in).
            self.apply_fairness_bound();
            let Some(head) = self.waiters.front() else {
                return;
            };
            if !self.grantable(head.mode) {
                if let Some(node) = &mut self.node
                    && node.mode == Mode::Shared
                    && head.mode == Mode::Exclusive
                {
                    // A writer is next: the read node goes, a write node follows.
                    node.draining = true;
                }
                return;
            }
            let Some(waiter) = self.waiters.pop_front() else {
                return;
            };
            let Some(node) = &mut self.node else {
                return;
            };
            let grant = node.next_grant(&self.me);
            if let Some((_, granted)) = &mut node.remote {
                *granted += 1;
            }
            if waiter.reply.send(Ok(Some(grant))).is_ok() {
                self.holders.insert(waiter.id, waiter.mode);
            }
        }
    }

    pub(super) fn start_acquiring(&mut self, mode: Mode, wait: bool, deadline: Option<Instant>) {
        self.acquiring = Some(Acquiring {
            mode,
            wait,
            future: self.engine.acquire_node(NodeRequest {
                name: self.name.clone(),
                mode,
                deadline,
                wait,
            }),
        });
    }

    /// Watches for a remote contender only when it matters: local waiters are
    /// queued behind the holders, or the node lingers.
    pub(super) fn watch_if_needed(&mut self) {
        let Some(node) = &self.node else {
            self.watch = None;
            return;
        };
        let needed = node.remote.is_none()
            && !node.draining
            && (!self.waiters.is_empty() || node.idle_since.is_some());
        if !needed {
            // Keep a running watch (cheap); start none.
            return;
        }
        if self.watch.is_none() {
            self.watch = Some(
                self.engine
                    .remote_contender(&self.name, &node.owned, node.mode),
            );
        }
    }

    pub(super) fn release_node(&mut self) {
        self.watch = None;
        if let Some(node) = self.node.take() {
            if node.idle_since.is_some() {
                self.engine.local_locks().uncache();
            }
            self.engine.release_node(node.owned);
        }
    }
}
