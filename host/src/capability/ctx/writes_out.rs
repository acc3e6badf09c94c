//! Guarded writes still out on the engine, per grant, and the releases that
//! wait for them.
//!
//! Under host-local hand-off the engine sees one node or key for all the
//! guests of a host that take a lock in turn, so its compare cannot tell one
//! local grant from the next. A write sent by an instance that then ended (a
//! deadline, the hold lease, a trap) would stay on the wire while the host
//! handed the lock to the next guest, and could commit after that guest's
//! write. So each guarded write runs to its answer whoever stops waiting
//! for it ([`to_answer`]), and a grant with writes out is released to the
//! engine only when the last of them has its answer. Every engine orders
//! what is sent after an answer after the answered request (ZooKeeper's
//! session order, etcd's raft log, PostgreSQL's commit order), so the next
//! local holder's writes follow every write of the one before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;

use super::LockError;
use super::guarded::ended_as_released;
use crate::backend::{BackendError, GrantId, LockSession};

/// Runs `write` (which owns its [`WriteOut`]) to the engine's answer,
/// whoever stops waiting for it: polled here first, so an engine that
/// answers at once (memory) costs no task, then, if it is still out, in a
/// task of its own that a dropped caller does not stop.
///
/// # Errors
/// The engine's answer (`UnknownGrant` as `Released`); `Unavailable` when
/// the task ended without one (it panicked, or the runtime shut down).
///
/// # Cancellation safety
/// Nothing is lost: a dropped call leaves the write running to its answer.
pub(super) async fn to_answer<T: Send + 'static>(
    write: impl Future<Output = Result<T, BackendError>> + Send + 'static,
) -> Result<T, LockError> {
    let mut write = Box::pin(write);
    // One poll, with no await between it and the spawn: the caller cannot
    // be dropped in between.
    let first = std::future::poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await;
    let answer = match first {
        Poll::Ready(answer) => answer,
        Poll::Pending => match tokio::spawn(write).await {
            Ok(answer) => answer,
            Err(ended) => Err(BackendError::Unavailable(format!(
                "the guarded write's task ended before the lock service answered: {ended}"
            ))),
        },
    };
    answer.map_err(ended_as_released)
}

/// The writes out per grant of one instance, shared with their tasks.
#[derive(Clone, Default)]
pub(super) struct WritesOut {
    grants: Arc<Mutex<HashMap<GrantId, Out>>>,
}

/// One grant's writes out, and whether its release waits for them.
#[derive(Default)]
struct Out {
    writes: usize,
    release: bool,
}

impl WritesOut {
    /// Counts a write through `grant` as out until the returned guard drops
    /// (in the write's task, once the engine answered, or when that task is
    /// dropped with the runtime).
    pub(super) fn start(&self, grant: GrantId, session: Arc<dyn LockSession>) -> WriteOut {
        self.map().entry(grant).or_default().writes += 1;
        WriteOut {
            writes: self.clone(),
            grant,
            session,
        }
    }

    /// Releases `grant` on `session` now, or, with writes out through it,
    /// once the last of them has its answer (then by that write's task).
    ///
    /// # Errors
    /// The session's refusal of a release made now (`UnknownGrant`); a
    /// deferred release's is logged.
    pub(super) fn release(
        &self,
        session: &dyn LockSession,
        grant: GrantId,
    ) -> Result<(), BackendError> {
        if let Some(out) = self.map().get_mut(&grant) {
            out.release = true;
            tracing::debug!(
                ?grant,
                writes = out.writes,
                "release waits for guarded writes out"
            );
            return Ok(());
        }
        session.release(grant)
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<GrantId, Out>> {
        self.grants.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One guarded write out ([`WritesOut::start`]); dropping it ends the write,
/// releasing its grant if that waited for it.
pub(super) struct WriteOut {
    writes: WritesOut,
    grant: GrantId,
    session: Arc<dyn LockSession>,
}

impl WriteOut {
    /// The session the write goes through (kept open by the write).
    pub(super) fn session(&self) -> &dyn LockSession {
        &*self.session
    }

    /// The grant the write goes through.
    pub(super) fn grant(&self) -> GrantId {
        self.grant
    }
}

impl Drop for WriteOut {
    fn drop(&mut self) {
        let release = {
            let mut map = self.writes.map();
            let Some(out) = map.get_mut(&self.grant) else {
                return;
            };
            out.writes -= 1;
            if out.writes > 0 {
                return;
            }
            map.remove(&self.grant).is_some_and(|out| out.release)
        };
        if release && let Err(error) = self.session.release(self.grant) {
            tracing::debug!(%error, grant = ?self.grant, "a release deferred for a guarded write failed");
        }
    }
}
