//! A guest's side of host-local hand-off: asking the lock's task for a grant
//! (or a downgrade), cancel safe (see `handoff`).

use std::sync::Weak;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::local_lock::Shared;
use super::node::until;
use super::{LocalGrant, LocalLocks, Message, TaskStart};
use crate::name::LockName;
use crate::{BackendError, Mode};

/// A grant made by a host-local lock task, as its guest keeps it.
#[derive(Clone)]
pub struct LocalHeld {
    /// The request's id at the task.
    pub id: u64,
    /// The session generation of the host's node ([`OwnedNode::generation`]):
    /// the grant stands while that session does, so its status is the
    /// session's (see [`crate::liveness::grant_status`]).
    ///
    /// [`OwnedNode::generation`]: super::OwnedNode::generation
    pub generation: u64,
    /// The grant's fencing token (see [`super::local_token`]): give it to the
    /// guest as the [`Grant`](crate::Grant)'s token.
    pub token: u64,
    /// The host's node that covers the grant.
    pub path: String,
    /// The task, which hands the lock on when this grant is released.
    pub(crate) task: mpsc::UnboundedSender<Message>,
    /// The lock's state, shared with the task.
    pub(crate) lock: Weak<Shared>,
}

impl LocalHeld {
    /// Releases the grant: the lock goes to the next local waiter at once
    /// when that is all there is to do (the task's state is shared with its
    /// grants); otherwise
    /// the task hands it on (or releases its node).
    pub fn release(&self) {
        if self
            .lock
            .upgrade()
            .is_some_and(|lock| lock.release_here(self.id))
        {
            return;
        }
        let _ = self.task.send(Message::Release { id: self.id });
    }

    /// Tells the task that someone asked the holders of the node at `path` to
    /// give it up: it makes no more local grants under it, so the node goes
    /// once its holders are gone (see the engine's revocation).
    pub fn node_revoked(&self, path: &str) {
        let _ = self.task.send(Message::Revoked {
            path: path.to_owned(),
        });
    }
}

/// Withdraws a request from its task unless disarmed (the acquire was
/// cancelled, timed out or failed).
struct Withdraw<'a> {
    task: &'a mpsc::UnboundedSender<Message>,
    id: u64,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.task.send(Message::Release { id: self.id });
        }
    }
}

fn task_ended() -> BackendError {
    BackendError::Unavailable("the host-local lock task ended".into())
}

/// What a request whose answer channel closed unanswered reports: the task
/// answers every request it drops (`timeout` to those past their deadline), so
/// this is reached only when the task itself is gone (the host shutting down);
/// past the deadline it is a `timeout` all the same.
fn unanswered(deadline: Option<Instant>) -> BackendError {
    match deadline {
        Some(deadline) if deadline <= Instant::now() => BackendError::Timeout,
        _ => task_ended(),
    }
}

impl LocalGrant {
    /// The grant as request `id`'s holding, released through `task`.
    fn held(self, id: u64, task: &mpsc::UnboundedSender<Message>) -> LocalHeld {
        LocalHeld {
            id,
            generation: self.generation,
            token: self.token,
            path: self.path,
            task: task.clone(),
            lock: self.lock,
        }
    }
}

/// Asks `name`'s task in `locks` for a grant in `mode` (`wait: false`
/// answers `None` rather than wait), starting the task with `start(TaskStart)`
/// when none runs (build it with [`LocalLock::new`](super::LocalLock::new) and spawn it).
///
/// A grant read after the session of the node it was made under ended (it
/// waited in its reply channel while the task dropped that node's holders,
/// and perhaps granted the lock anew under the next node) is void: the
/// request is withdrawn and asked again within the same deadline, as the
/// task's other waiters queue again for the next node. So no guest is told
/// it holds beside a guest granted under a later node.
///
/// # Errors
/// `Timeout` past `deadline`; what the task's node acquisition reported.
///
/// # Cancellation safety
/// Cancel safe: a dropped request is withdrawn from the task (or its grant
/// released at once).
pub async fn ask(
    locks: &LocalLocks,
    name: &LockName,
    mode: Mode,
    deadline: Option<Instant>,
    wait: bool,
    start: impl Fn(TaskStart),
) -> Result<Option<LocalHeld>, BackendError> {
    loop {
        let id = locks.next_id();
        let (reply, answer) = oneshot::channel();
        let message = Message::Acquire {
            id,
            mode,
            wait,
            deadline,
            reply,
        };
        let task = locks.send(name, message, &start);
        let mut withdraw = Withdraw {
            task: &task,
            id,
            armed: true,
        };
        let answer = until(deadline, answer)
            .await?
            .map_err(|_| unanswered(deadline))??;
        let Some(grant) = answer else {
            return Ok(None);
        };
        if !grant.stands(id) {
            // `withdraw` stays armed: the task forgets the request (a holder
            // of the ended session, if it had not dropped it yet).
            tracing::debug!(%name, token = grant.token, "a local grant outlived its node's session: asking again");
            continue;
        }
        withdraw.armed = false;
        return Ok(Some(grant.held(id, &task)));
    }
}

/// Asks the task of `exclusive` for a shared grant beside it (a downgrade; the
/// host's node keeps covering both).
///
/// # Errors
/// `UnknownGrant` when `exclusive` is not an exclusive grant held at the task;
/// `Lost` when the node's session ended before the shared grant was read.
///
/// # Cancellation safety
/// Cancel safe, as [`ask`].
pub async fn downgrade(
    locks: &LocalLocks,
    exclusive: &LocalHeld,
) -> Result<LocalHeld, BackendError> {
    let new_id = locks.next_id();
    let (reply, answer) = oneshot::channel();
    let task = &exclusive.task;
    let message = Message::Downgrade {
        id: exclusive.id,
        new_id,
        reply,
    };
    let mut withdraw = Withdraw {
        task,
        id: new_id,
        armed: true,
    };
    // A grant that was lost may have a task that is retiring: a question
    // sent to it must not be waited for forever (see `reply`).
    let grant = super::reply::ask_task(task, message, answer)
        .await
        .ok_or_else(task_ended)??;
    if !grant.stands(new_id) {
        // Made under a node whose session ended before it was read (see
        // `ask`): the exclusive grant went with it.
        return Err(BackendError::Lost);
    }
    withdraw.armed = false;
    Ok(grant.held(new_id, task))
}
