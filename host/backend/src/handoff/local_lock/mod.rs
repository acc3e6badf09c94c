//! One host-local lock: the task that owns this host's node for one lock name
//! and hands the grant among the host's guests in FIFO order (see `handoff`).
//!
//! The task runs while anyone holds, waits for or lingers on the lock, and
//! retires when nothing is left. It reacts to five things: a guest's message, the
//! node's acquisition finishing, a remote contender showing up behind the node
//! (one child watch, set only by the holding host and only while it has local
//! waiters or lingers), a timer (fairness bound, linger) and the end of the
//! node's ZooKeeper session.

mod engine;
mod grants;
#[cfg(test)]
mod model_tests;

pub use engine::{NodeEngine, NodeFuture, NodeRequest, NodeSession, WatchFuture};

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::node::{OwnedNode, SessionHealth};
use super::{GRANTS_PER_NODE, LocalGrant, LocalHandoff, Message, TaskStart, local_token};
use crate::name::LockName;
use crate::{BackendError, Mode};

/// How often a task with waiters looks at a suspended session again.
const SUSPENDED_POLL: std::time::Duration = std::time::Duration::from_millis(20);

type Reply = oneshot::Sender<Result<Option<LocalGrant>, BackendError>>;

/// A guest waiting for a local grant.
struct Waiter {
    id: u64,
    mode: Mode,
    wait: bool,
    deadline: Option<Instant>,
    reply: Reply,
}

/// The host's node, held.
struct HostNode {
    owned: OwnedNode,
    mode: Mode,
    session: Arc<dyn NodeSession>,
    /// Grants made under this node so far (the low bits of their tokens).
    grants: u64,
    /// When a remote contender was first seen behind the node, and the local
    /// grants made since.
    remote: Option<(Instant, u32)>,
    /// No more local grants: the node goes once its holders are gone.
    draining: bool,
    /// Since when nobody holds or waits (the linger started).
    idle_since: Option<Instant>,
}

impl HostNode {
    /// The next grant under this node: its token's low bits count the grants
    /// (see `handoff`); the node drains once they are used up.
    fn next_grant(&mut self) -> LocalGrant {
        let grant = LocalGrant {
            generation: self.owned.generation,
            token: local_token(self.owned.token, self.grants),
            path: self.owned.path.clone(),
        };
        self.grants += 1;
        if self.grants >= GRANTS_PER_NODE {
            self.draining = true;
        }
        grant
    }
}

/// An acquisition of the host's node in progress.
struct Acquiring {
    mode: Mode,
    wait: bool,
    future: NodeFuture,
}

/// What woke the task.
enum Event {
    Message(Option<Message>),
    Acquired(Result<Option<OwnedNode>, BackendError>),
    RemoteContender,
    Timer,
    SessionEnded,
}

/// The task of one (host, lock name): made and spawned by the `start`
/// callback of [`ask`](super::ask) when no task runs for the name.
pub struct LocalLock {
    engine: Arc<dyn NodeEngine>,
    name: LockName,
    task: u64,
    limits: LocalHandoff,
    receiver: mpsc::UnboundedReceiver<Message>,
    waiters: VecDeque<Waiter>,
    /// Grants under the current node, by request id.
    holders: HashMap<u64, Mode>,
    node: Option<HostNode>,
    acquiring: Option<Acquiring>,
    watch: Option<WatchFuture>,
}

impl LocalLock {
    /// The task for `name` on `engine`, from the `start` that
    /// [`ask`](super::ask) gave its callback, handing off within `limits`.
    /// Spawn [`LocalLock::run`] on the engine's runtime.
    pub fn new(
        engine: Arc<dyn NodeEngine>,
        name: LockName,
        start: TaskStart,
        limits: LocalHandoff,
    ) -> Self {
        let TaskStart { task, receiver } = start;
        LocalLock {
            engine,
            name,
            task,
            limits,
            receiver,
            waiters: VecDeque::new(),
            holders: HashMap::new(),
            node: None,
            acquiring: None,
            watch: None,
        }
    }

    /// Runs until nobody holds, waits for or lingers on the lock.
    pub async fn run(mut self) {
        loop {
            self.settle();
            let idle = self.node.is_none() && self.acquiring.is_none() && self.waiters.is_empty();
            if idle
                && self
                    .engine
                    .local_locks()
                    .retire(&self.name, self.task, &self.receiver)
            {
                return;
            }
            let event = self.next_event().await;
            match event {
                Event::Message(Some(message)) => self.on_message(message),
                // Every sender is gone: nobody can hold or wait any more.
                Event::Message(None) => {
                    self.release_node();
                    return;
                }
                Event::Acquired(result) => self.on_acquired(result),
                Event::RemoteContender => {
                    self.watch = None;
                    if let Some(node) = &mut self.node {
                        node.remote.get_or_insert((Instant::now(), 0));
                    }
                }
                Event::Timer => {}
                Event::SessionEnded => self.on_session_ended(),
            }
        }
    }

    async fn next_event(&mut self) -> Event {
        let wake_at = self.wake_at();
        let session = self.node.as_ref().map(|n| n.session.clone());
        // Async blocks capture whole variables: borrow the fields apart first.
        let receiver = &mut self.receiver;
        let acquiring = &mut self.acquiring;
        let watch = &mut self.watch;
        tokio::select! {
            message = receiver.recv() => Event::Message(message),
            result = async {
                match acquiring {
                    Some(acquiring) => (&mut acquiring.future).await,
                    None => std::future::pending().await,
                }
            } => Event::Acquired(result),
            () = async {
                match watch {
                    Some(watch) => watch.await,
                    None => std::future::pending().await,
                }
            } => Event::RemoteContender,
            () = async {
                match wake_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => Event::Timer,
            () = async move {
                match session {
                    Some(session) => session.until_over().await,
                    None => std::future::pending().await,
                }
            } => Event::SessionEnded,
        }
    }

    /// The next instant a bound or the linger runs out.
    fn wake_at(&self) -> Option<Instant> {
        let node = self.node.as_ref()?;
        if !self.waiters.is_empty() && node.session.health() != SessionHealth::Live {
            // No local grant while contact is interrupted: look again soon.
            return Some(Instant::now() + SUSPENDED_POLL);
        }
        let fairness = node
            .remote
            .filter(|_| !node.draining)
            .map(|(since, _)| since + self.limits.max_time);
        let linger = node.idle_since.map(|since| since + self.limits.linger);
        match (fairness, linger) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn on_message(&mut self, message: Message) {
        match message {
            Message::Acquire {
                id,
                mode,
                wait,
                deadline,
                reply,
            } => {
                let waiter = Waiter {
                    id,
                    mode,
                    wait,
                    deadline,
                    reply,
                };
                if wait {
                    self.waiters.push_back(waiter);
                } else {
                    self.try_now(waiter);
                }
            }
            Message::Release { id } => {
                if self.holders.remove(&id).is_none() {
                    self.waiters.retain(|w| w.id != id);
                }
            }
            Message::Downgrade { id, new_id, reply } => {
                let _ = reply.send(self.downgrade(id, new_id));
            }
            Message::Flush => {}
            Message::Cached { reply } => {
                let cached = self.node.as_ref().is_some_and(|n| n.idle_since.is_some());
                let _ = reply.send(cached);
            }
            Message::Count { reply } => {
                let waiting = self.waiters.iter().filter(|w| !w.reply.is_closed());
                let _ = reply.send(self.holders.len() + waiting.count());
            }
            Message::Revoked { path } => {
                if let Some(node) = self.node.as_mut().filter(|n| n.owned.path == path) {
                    node.draining = true;
                }
            }
        }
    }

    /// A shared grant beside exclusive grant `id` of the same guest, under the
    /// same node (whatever its mode, it covers a shared use).
    fn downgrade(&mut self, id: u64, new_id: u64) -> Result<LocalGrant, BackendError> {
        let node = match (&mut self.node, self.holders.get(&id)) {
            (Some(node), Some(Mode::Exclusive)) => node,
            _ => return Err(BackendError::UnknownGrant(id)),
        };
        let grant = node.next_grant();
        self.holders.insert(new_id, Mode::Shared);
        Ok(grant)
    }

    /// A try-acquire: granted now, tried once on ZooKeeper when the host has
    /// nothing for this lock, or answered `None`.
    fn try_now(&mut self, waiter: Waiter) {
        let quiet = self.waiters.is_empty() && self.holders.is_empty();
        if quiet && self.node.is_none() && self.acquiring.is_none() {
            self.start_acquiring(waiter.mode, false, None);
            self.waiters.push_back(waiter);
        } else if quiet || (self.waiters.is_empty() && self.grantable(waiter.mode)) {
            // Granted by `settle` (queue empty, compatible) if the node allows.
            self.waiters.push_back(waiter);
            self.grant_local();
            if let Some(waiter) = self.waiters.pop_front() {
                let _ = waiter.reply.send(Ok(None));
            }
        } else {
            let _ = waiter.reply.send(Ok(None));
        }
    }

    fn on_acquired(&mut self, result: Result<Option<OwnedNode>, BackendError>) {
        let Some(acquiring) = self.acquiring.take() else {
            return;
        };
        match result {
            Ok(Some(owned)) => match self.engine.session(owned.generation) {
                Some(session) => {
                    self.node = Some(HostNode {
                        owned,
                        mode: acquiring.mode,
                        session,
                        grants: 0,
                        remote: None,
                        draining: false,
                        idle_since: None,
                    });
                }
                // The session ended as the node was granted: queue again.
                None => self.engine.release_node(owned),
            },
            Ok(None) => self.answer_tries(Ok(None)),
            Err(error) if !acquiring.wait => self.answer_tries(Err(error)),
            Err(BackendError::Timeout) => self.answer_expired(Instant::now()),
            Err(error) => {
                for waiter in self.waiters.drain(..) {
                    let _ = waiter.reply.send(Err(error.clone()));
                }
            }
        }
    }

    /// Answers `Timeout` to every waiter whose own deadline is not after `now`
    /// and keeps the others. Each is answered, never just dropped: a closed
    /// answer channel would reach its guest as something else than `timeout`
    /// when the guest's own timer and this answer race.
    pub(crate) fn answer_expired(&mut self, now: Instant) {
        let (expired, waiting): (VecDeque<Waiter>, VecDeque<Waiter>) = self
            .waiters
            .drain(..)
            .partition(|w| w.deadline.is_some_and(|deadline| deadline <= now));
        self.waiters = waiting;
        for waiter in expired {
            let _ = waiter.reply.send(Err(BackendError::Timeout));
        }
    }

    /// Answers the try-acquires waiting on a one-shot attempt.
    fn answer_tries(&mut self, answer: Result<Option<LocalGrant>, BackendError>) {
        let (tries, waits): (VecDeque<Waiter>, VecDeque<Waiter>) =
            self.waiters.drain(..).partition(|w| !w.wait);
        self.waiters = waits;
        for waiter in tries {
            let answer = match &answer {
                Ok(_) => Ok(None),
                Err(error) => Err(error.clone()),
            };
            let _ = waiter.reply.send(answer);
        }
    }

    fn on_session_ended(&mut self) {
        // Every grant under the node reports `lost` (their generation ended);
        // the waiters queue again on the next session.
        self.holders.clear();
        self.release_node();
    }
}
