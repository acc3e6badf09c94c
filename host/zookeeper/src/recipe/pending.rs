//! The guard that makes an attempt cancel safe: the node of an attempt that did not
//! end in a grant is deleted, whatever ended it.

use std::sync::Arc;

use super::super::Shared;
use super::release;

/// Deletes the node of an attempt that did not end in a grant, when dropped: after
/// a timeout, an error, a retry, a try-acquire that found the lock busy, or the
/// caller's future being dropped mid-wait. Tracks the node's prefix from before
/// the create, so reconciliation never takes it for an orphan.
pub(crate) struct PendingNode {
    shared: Arc<Shared>,
    generation: u64,
    parent: String,
    prefix: String,
    path: Option<String>,
    armed: bool,
}

impl PendingNode {
    pub(crate) fn new(shared: &Arc<Shared>, generation: u64, parent: &str, prefix: &str) -> Self {
        shared.track(generation, prefix);
        PendingNode {
            shared: shared.clone(),
            generation,
            parent: parent.to_owned(),
            prefix: prefix.to_owned(),
            path: None,
            armed: true,
        }
    }

    /// The create succeeded: the node is `path`.
    pub(crate) fn created(&mut self, path: &str) {
        self.path = Some(path.to_owned());
    }

    /// The attempt ended in a grant: the node now belongs to the grant.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for PendingNode {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let prefix = std::mem::take(&mut self.prefix);
        match self.path.take() {
            Some(path) => release::delete_node(&self.shared, self.generation, prefix, path),
            None => release::delete_by_prefix(
                &self.shared,
                self.generation,
                std::mem::take(&mut self.parent),
                prefix,
            ),
        }
    }
}
