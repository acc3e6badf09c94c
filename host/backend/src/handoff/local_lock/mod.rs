//! One host-local lock: the task that owns this host's node for one lock name
//! and hands the grant among the host's guests in FIFO order (see `handoff`).
//!
//! The task runs while anyone holds, waits for or lingers on the lock, and
//! retires when nothing is left. Its state sits behind a mutex it shares with
//! the lock's guests, so the common step of a contended lock costs no task
//! wake-up: a wait joins a queue that is already waiting in place, and a
//! release grants the next waiter in place ([`Shared::queue_here`],
//! [`Shared::release_here`]); everything else goes through the task.
//!
//! The task reacts to five things: a guest's message, the node's acquisition
//! finishing, a remote contender showing up behind the node
//! (one child watch, set only by the holding host and only while it has local
//! waiters or lingers), a timer (fairness bound, linger) and the end of the
//! node's ZooKeeper session.

mod engine;
mod grants;
#[cfg(test)]
mod model_tests;

pub use engine::{NodeEngine, NodeFuture, NodeRequest, NodeSession, WatchFuture};

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::node::{OwnedNode, SessionHealth};
use super::{
    GRANTS_PER_NODE, LocalGrant, LocalHandoff, LocalLocks, Message, TaskStart, local_token,
};
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
    /// Resolves when `session` is over. Made once per node rather than once
    /// per event: a fresh one subscribes to the session's state every time.
    ended: WatchFuture,
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
    /// Whether the node may stay cached once nobody holds or waits: the
    /// host caches locks (`linger` is not zero) and has not dropped its
    /// caches, the node still takes grants, and no other host waits for it.
    fn may_cache(&self, linger: std::time::Duration, locks: &LocalLocks) -> bool {
        !self.draining && self.remote.is_none() && !linger.is_zero() && !locks.caches_dropped()
    }

    /// The node is used again: no longer a cached node (its place in the
    /// host's cache goes back, if it had one).
    fn leave_cache(&mut self, locks: &LocalLocks) {
        if self.idle_since.take().is_some() {
            locks.uncache();
        }
    }

    /// The next grant under this node: its token's low bits count the grants
    /// (see `handoff`); the node drains once they are used up.
    fn next_grant(&mut self, lock: &Weak<Shared>) -> LocalGrant {
        let grant = LocalGrant {
            generation: self.owned.generation,
            token: local_token(self.owned.token, self.grants),
            path: self.owned.path.clone(),
            lock: lock.clone(),
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
    receiver: mpsc::UnboundedReceiver<Message>,
    state: LockState,
}

/// What a host-local lock knows: its queue, its holders, the host's node.
/// Behind a mutex that the task and the lock's holders share ([`Shared`]):
/// a holder's release hands the lock to the next local waiter itself when
/// nothing else changes (see [`Shared::release_here`]), so a local hand-off
/// wakes the next guest only, not the task and then the guest.
pub(super) struct LockState {
    engine: Arc<dyn NodeEngine>,
    name: LockName,
    task: u64,
    limits: LocalHandoff,
    /// The mutex this state lives in, for the grants it makes.
    me: Weak<Shared>,
    /// `Acquire` messages sent to the task and not yet taken (see
    /// [`Shared::queue_here`]).
    acquires_sent: Arc<AtomicUsize>,
    waiters: VecDeque<Waiter>,
    /// Grants under the current node, by request id.
    holders: HashMap<u64, Mode>,
    node: Option<HostNode>,
    acquiring: Option<Acquiring>,
    watch: Option<WatchFuture>,
}

/// A [`LockState`] shared by its task and the grants it made.
pub(crate) struct Shared(Mutex<LockState>);

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LocalLock")
    }
}

impl Shared {
    /// One line of what the task holds, queues and waits for (see
    /// `LocalLocks::describe`).
    pub(crate) fn describe(&self) -> String {
        let state = self.lock();
        let waiters: Vec<String> = state
            .waiters
            .iter()
            .map(|w| {
                let gone = if w.reply.is_closed() { " (gone)" } else { "" };
                format!(
                    "{}:{:?}{}{gone}",
                    w.id,
                    w.mode,
                    if w.wait { "" } else { " try" }
                )
            })
            .collect();
        let node = state.node.as_ref().map(|n| {
            format!(
                "{} {:?} (session {:?}, draining {}, idle for {:?}, remote {:?}, grants {})",
                n.owned.path,
                n.mode,
                n.session.health(),
                n.draining,
                n.idle_since.map(|t| t.elapsed()),
                n.remote.map(|(since, granted)| (since.elapsed(), granted)),
                n.grants
            )
        });
        format!(
            "waiters [{}], holders {:?}, node {}, acquiring {}, watching {}",
            waiters.join(", "),
            state.holders,
            node.unwrap_or_else(|| "none".into()),
            state.acquiring.as_ref().map_or("no".into(), |a| format!(
                "{:?}{}",
                a.mode,
                if a.wait { "" } else { " try" }
            )),
            state.watch.is_some(),
        )
    }

    /// Whether grant `id`, made under the node of session `generation`,
    /// still stands as its guest reads it. It does not once that node's
    /// session ended: the task then drops the node's holders and may grant
    /// the lock anew under the next node, to a guest that read its grant
    /// first, while the old grant still waited unread in its reply channel.
    /// Checked under the state's mutex, which the next grant needs too, so a
    /// grant that stands here was read before any grant under a later node.
    pub(crate) fn stands(&self, id: u64, generation: u64) -> bool {
        let state = self.lock();
        state.holders.contains_key(&id)
            && state.node.as_ref().is_some_and(|node| {
                node.owned.generation == generation && node.session.health() != SessionHealth::Ended
            })
    }

    fn lock(&self) -> MutexGuard<'_, LockState> {
        // The state is consistent between statements: a panic elsewhere
        // leaves nothing half-done that a poisoned lock would guard against.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Releases grant `id` and grants the next local waiters, in the caller's
    /// own task, when that is all there is to do: the host's node is held and
    /// not draining, and the release lets a waiter in (with nobody waiting,
    /// the holder goes here and the task settles the rest). Anything more (the node
    /// to release or cache, a turn ending, a waiter that cannot be granted)
    /// answers false, and the caller sends the release to the task, which
    /// settles as it does for every message (the grant, if removed here, is
    /// then simply gone).
    pub(crate) fn release_here(&self, id: u64) -> bool {
        let mut state = self.lock();
        let simple =
            state.node.as_ref().is_some_and(|n| !n.draining) && state.holders.contains_key(&id);
        if !simple {
            return false;
        }
        if state.waiters.is_empty() {
            // Nobody waits: the holder goes now, and the node is cached now
            // when the task's settle would cache it, so that the host's
            // next acquire can be granted in place (`queue_here`); the task
            // still hears of the release and settles the rest (its linger
            // timer, or giving the node up).
            state.holders.remove(&id);
            if state.holders.is_empty() {
                state.cache_idle_node();
            }
            return false;
        }
        state.holders.remove(&id);
        let before = state.holders.len();
        state.grant_local();
        state.holders.len() > before && state.node.as_ref().is_some_and(|n| !n.draining)
    }

    /// Queues a wait at the end of the local queue in the caller's own task,
    /// when the task has nothing to do about it: the host's node is held and
    /// not draining, others wait already (so the task watches for remote
    /// contenders and keeps its timers as it would with this one), and no
    /// acquire sent to the task is still untaken (`LocalLocks::send` checks
    /// that, under its lock). With nobody waiting, it grants the request in
    /// place when the node lets it in now (a cached node nobody holds, or
    /// shared holders a shared request joins; never a node the task is about
    /// to give up): the grant rules are the
    /// task's own (`grant_local`), and a cached node taken so is no longer
    /// counted as cached. Any other message comes back, for the task.
    pub(crate) fn queue_here(&self, message: Message) -> Result<(), Message> {
        let Message::Acquire {
            id,
            mode,
            wait: true,
            deadline,
            reply,
        } = message
        else {
            return Err(message);
        };
        let back = |waiter: Waiter| Message::Acquire {
            id: waiter.id,
            mode: waiter.mode,
            wait: true,
            deadline: waiter.deadline,
            reply: waiter.reply,
        };
        let waiter = Waiter {
            id,
            mode,
            wait: true,
            deadline,
            reply,
        };
        let mut state = self.lock();
        if state.node.as_ref().is_none_or(|n| n.draining) {
            return Err(back(waiter));
        }
        if !state.waiters.is_empty() {
            state.waiters.push_back(waiter);
            return Ok(());
        }
        // Into a node nobody holds only when it is cached: without the lock
        // cache the host gives its node up at every release, which the task
        // does.
        let cached = state.node.as_ref().is_some_and(|n| n.idle_since.is_some());
        if (state.holders.is_empty() && !cached) || !state.grantable(mode) {
            return Err(back(waiter));
        }
        state.waiters.push_back(waiter);
        state.grant_local();
        if let Some(waiter) = state.waiters.pop_back() {
            // Not granted after all (the fairness bound ended the turn): the
            // task decides, as it does for every message.
            return Err(back(waiter));
        }
        let engine = state.engine.clone();
        if let Some(node) = &mut state.node {
            node.leave_cache(engine.local_locks());
        }
        Ok(())
    }
}

/// The futures the task waits on, out of the state while it waits (the
/// state's mutex is not held across an await).
struct Parked {
    acquiring: Option<NodeFuture>,
    watch: Option<WatchFuture>,
    ended: Option<WatchFuture>,
}

/// A future that never resolves, in a future's place while it is parked
/// (zero-sized: no allocation).
fn placeholder<T: 'static>() -> Pin<Box<dyn Future<Output = T> + Send>> {
    Box::pin(std::future::pending())
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
        let TaskStart {
            task,
            receiver,
            acquires_sent,
        } = start;
        LocalLock {
            receiver,
            state: LockState {
                engine,
                name,
                task,
                limits,
                me: Weak::new(),
                acquires_sent,
                waiters: VecDeque::new(),
                holders: HashMap::new(),
                node: None,
                acquiring: None,
                watch: None,
            },
        }
    }

    /// Runs until nobody holds, waits for or lingers on the lock.
    pub async fn run(self) {
        let LocalLock {
            mut receiver,
            mut state,
        } = self;
        let (engine, name, task) = (state.engine.clone(), state.name.clone(), state.task);
        let shared = Arc::new_cyclic(|me| {
            state.me = me.clone();
            Shared(Mutex::new(state))
        });
        engine
            .local_locks()
            .attach(&name, task, Arc::downgrade(&shared));
        loop {
            let (idle, wake_at, mut parked) = {
                let mut state = shared.lock();
                state.settle();
                let idle =
                    state.node.is_none() && state.acquiring.is_none() && state.waiters.is_empty();
                (idle, state.wake_at(), state.park())
            };
            // Outside the state's lock (`LocalLocks::send` takes the two the
            // other way round). Nothing can queue at the state meanwhile: a
            // wait queues there only while the node is held, and only the task
            // takes one.
            if idle && engine.local_locks().retire(&name, task, &receiver) {
                return;
            }
            let event = next_event(&mut receiver, &mut parked, wake_at).await;
            let mut state = shared.lock();
            state.unpark(parked, &event);
            match event {
                Event::Message(Some(message)) => state.on_message(message),
                // Every sender is gone: nobody can hold or wait any more.
                Event::Message(None) => {
                    state.release_node();
                    return;
                }
                Event::Acquired(result) => state.on_acquired(result),
                Event::RemoteContender => {
                    state.watch = None;
                    if let Some(node) = &mut state.node {
                        node.remote.get_or_insert((Instant::now(), 0));
                    }
                }
                Event::Timer => {}
                Event::SessionEnded => state.on_session_ended(),
            }
        }
    }
}

async fn next_event(
    receiver: &mut mpsc::UnboundedReceiver<Message>,
    parked: &mut Parked,
    wake_at: Option<Instant>,
) -> Event {
    // Async blocks capture whole variables: borrow the fields apart first.
    let Parked {
        acquiring,
        watch,
        ended,
    } = parked;
    tokio::select! {
        message = receiver.recv() => Event::Message(message),
        result = async {
            match acquiring {
                Some(acquiring) => acquiring.await,
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
        () = async {
            match ended {
                Some(ended) => ended.await,
                None => std::future::pending().await,
            }
        } => Event::SessionEnded,
    }
}

impl LockState {
    /// Takes the futures the task waits on out of the state.
    fn park(&mut self) -> Parked {
        Parked {
            acquiring: self
                .acquiring
                .as_mut()
                .map(|a| std::mem::replace(&mut a.future, placeholder())),
            watch: self.watch.take(),
            ended: self
                .node
                .as_mut()
                .map(|n| std::mem::replace(&mut n.ended, placeholder())),
        }
    }

    /// Puts back the futures that `event` did not complete. Only the task
    /// changes the acquisition, the watch and the node, so they are the ones
    /// the futures were taken from.
    fn unpark(&mut self, parked: Parked, event: &Event) {
        if !matches!(event, Event::Acquired(_))
            && let (Some(acquiring), Some(future)) = (&mut self.acquiring, parked.acquiring)
        {
            acquiring.future = future;
        }
        if !matches!(event, Event::RemoteContender) {
            self.watch = parked.watch;
        }
        if !matches!(event, Event::SessionEnded)
            && let (Some(node), Some(ended)) = (&mut self.node, parked.ended)
        {
            node.ended = ended;
        }
    }

    /// The next instant a bound or the linger runs out.
    fn wake_at(&self) -> Option<Instant> {
        let node = self.node.as_ref()?;
        if !node.draining
            && self
                .waiters
                .front()
                .is_some_and(|head| self.fits(head.mode))
        {
            // The head fits beside the holders, yet `settle` did not grant
            // it: contact was interrupted when it looked. Look again soon.
            // Not decided by reading the health again here: contact may have
            // come back since `settle` looked, and a task that then set no
            // timer would sleep with a waiter it can grant and nothing to
            // wake it.
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
                // Taken: a wait sent after this one may queue directly now.
                self.acquires_sent.fetch_sub(1, Ordering::AcqRel);
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
        let grant = node.next_grant(&self.me);
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
                        ended: session.clone().until_over(),
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
