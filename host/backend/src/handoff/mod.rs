//! Host-local hand-off, for every remote engine: the guests of one host that
//! want the same lock queue once in the lock service (one node or key, in the
//! engine's layout) and pass the grant among themselves in memory, in FIFO
//! order, without a write between them. One [`LocalLock`] task per (host, lock
//! name) owns the node; an engine plugs in through [`NodeEngine`].
//!
//! Fair to other hosts: while a remote contender queues behind the host's node,
//! the host hands off locally at most [`LocalHandoff::max_handoffs`] more times
//! or for [`LocalHandoff::max_time`], then releases its node so the remote
//! contender goes next.
//!
//! Fencing tokens: every grant's token is `node << 16 | k`, where `node` is the
//! node's own token (ZooKeeper: a zxid; etcd: a create revision) and `k` counts
//! the grants made under that node (0 for the first). Tokens therefore rise
//! across local hand-offs and across hosts. Limits: `k` < 65,536 per node (the
//! host then queues a new node) and the node's token below 2^48 (ZooKeeper:
//! fewer than 65,536 leader epochs).
//!
//! # What an engine provides, what it gets
//!
//! An engine with a lock service of its own (nodes or keys queued in creation
//! order, a session or lease they live in, a watch on a change) implements
//! [`NodeEngine`] (queue the host's node, release it, notice a remote
//! contender behind it, name the session a node lives in) and
//! [`NodeSession`] (what that session vouches for now, when it is over). Its
//! session then does no queueing of its own: it implements
//! [`HandoffSession`] (one [`LocalLocks`] per backend, a [`SessionGrants`]
//! per session, a [`SessionLookup`] that tells how a node's session is
//! doing) and gets [`LockSession`](crate::LockSession) with it: each grant
//! is asked for with [`ask`] (starting the lock's [`LocalLock`] task on the
//! engine when none runs) and kept in the grants, which release, downgrade
//! and report statuses: a grant's status is its node's session's
//! ([`LocalHeld::generation`]; see [`crate::liveness`] for the session
//! clock). The task does the rest: FIFO among the host's guests, the
//! fairness bound, the linger, tokens, answering every request once. The
//! `handoff_nodes.rs` of `wardlock-zookeeper`, `wardlock-etcd` and
//! `wardlock-postgres` are three engines;
//! `host/examples/node-engine` in wardlock's repository is a small one over
//! an in-process store, built on this crate's public API alone.

mod local_lock;
mod node;
mod reply;
mod request;
mod session;
mod session_grants;

pub use local_lock::{LocalLock, NodeEngine, NodeFuture, NodeRequest, NodeSession, WatchFuture};
pub use node::{OwnedNode, SessionHealth, deadline_after, until};
pub use request::{LocalHeld, ask, downgrade};
pub use session::{HandoffSession, OwnAcquire};
pub use session_grants::{SessionGrants, SessionLookup, Standing};

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::name::LockName;
use crate::{BackendError, Mode};

/// Bits of a fencing token that count grants under one node.
pub const LOCAL_BITS: u32 = 16;

/// Grants one node may carry before the host queues a new one.
pub const GRANTS_PER_NODE: u64 = 1 << LOCAL_BITS;

/// The fencing token of grant `k` under a node whose own token is `node_token`.
pub fn local_token(node_token: u64, k: u64) -> u64 {
    (node_token << LOCAL_BITS) | k
}

/// How far one host may hand a lock among its own guests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalHandoff {
    /// Local grants still made after a remote contender was seen queueing.
    pub max_handoffs: u32,
    /// How long after a remote contender was seen local grants may still be made.
    pub max_time: Duration,
    /// How long the host keeps (caches) its node after the last local
    /// release, so a re-acquire on this host costs no round trip (zero:
    /// release at once). A contender of another host ends it at once: the
    /// task watches the lock's queue while it caches (see [`LocalLocks`] for
    /// the bound on how many nodes a host caches).
    pub linger: Duration,
}

/// How long the command line's engines cache a released lock by default
/// ([`LocalHandoff::cached`]; `--linger-ms`, `--no-lock-cache`).
pub const DEFAULT_CACHE_TIME: Duration = Duration::from_secs(5);

/// How many released locks one host caches at most by default
/// ([`LocalLocks::set_cache_limit`]).
pub const DEFAULT_CACHE_LIMIT: usize = 1024;

impl LocalHandoff {
    /// The default limits with lock caching: the host keeps its node
    /// [`DEFAULT_CACHE_TIME`] after the last local release, until another
    /// host queues for the lock (Chubby's lock caching). What `wardlock run`
    /// and `serve` use on ZooKeeper and etcd unless told `--no-lock-cache`.
    pub fn cached() -> Self {
        LocalHandoff {
            linger: DEFAULT_CACHE_TIME,
            ..LocalHandoff::default()
        }
    }

    /// No hand-off while another host waits: the host's node goes after every
    /// local holder (etcd with `--no-local-handoff`).
    pub const NONE: LocalHandoff = LocalHandoff {
        max_handoffs: 0,
        max_time: Duration::ZERO,
        linger: Duration::ZERO,
    };
}

impl Default for LocalHandoff {
    /// 32 hand-offs or 10 ms once a remote contender waits; no linger.
    ///
    /// The time bound is the fairness guarantee; the count only ends a turn
    /// early when grants are fast. At 8, a host's turn of fast grants (~0.1 ms
    /// each) lasted ~1 ms against a ~2 ms hand-over to the next host, so most
    /// of the lock's time went to hand-overs: `wardlock-bench --workloads hosts
    /// --hosts 4 --clients 16 --handoff-max N` measured 3,051 grants/s at 8,
    /// 3,746 at 16, 4,816 at 32 and 5,793 at 64, with the longest wait 37.5,
    /// 28.8, 39.9 and 51.5 ms (tests/BENCHMARKS.md, `hosts`).
    fn default() -> Self {
        LocalHandoff {
            max_handoffs: 32,
            max_time: Duration::from_millis(10),
            linger: Duration::ZERO,
        }
    }
}

/// A grant made by a host-local lock task, as the task answers it (a
/// guest's side keeps it as a [`LocalHeld`]).
#[derive(Debug)]
pub struct LocalGrant {
    /// The session generation of the host's node.
    pub generation: u64,
    /// The grant's fencing token: [`local_token`] of the node's token and the
    /// grants made under the node before it.
    pub token: u64,
    /// The host's node (revocation watches it).
    pub path: String,
    /// The lock's state, for a release that hands the lock on in place
    /// ([`LocalHeld::release`]).
    pub(crate) lock: std::sync::Weak<local_lock::Shared>,
}

impl LocalGrant {
    /// Whether the grant, made for request `id`, still stands as its guest
    /// reads it (see `Shared::stands`); false once its task is gone.
    pub(crate) fn stands(&self, id: u64) -> bool {
        self.lock
            .upgrade()
            .is_some_and(|lock| lock.stands(id, self.generation))
    }
}

/// Where a new host-local lock task starts: its number and the requests
/// waiting for it. [`ask`] makes one when no task runs for the lock and
/// hands it to its `start` callback, which builds the task with
/// [`LocalLock::new`] and spawns [`LocalLock::run`]. Opaque: the protocol
/// between guests and the task is the toolkit's own.
pub struct TaskStart {
    pub(crate) task: u64,
    pub(crate) receiver: mpsc::UnboundedReceiver<Message>,
    pub(crate) acquires_sent: Arc<AtomicUsize>,
}

impl std::fmt::Debug for TaskStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStart")
            .field("task", &self.task)
            .finish()
    }
}

/// What a guest asks of a host-local lock: the protocol between [`ask`],
/// [`downgrade`], [`LocalHeld`] and the [`LocalLock`] task.
pub(crate) enum Message {
    /// A grant in `mode` for request `id`, answered on `reply`.
    Acquire {
        /// The request's id (from [`LocalLocks::next_id`]), which a release
        /// or a withdrawal names.
        id: u64,
        /// The mode asked for.
        mode: Mode,
        /// False for try-acquire: answer `None` rather than wait.
        wait: bool,
        /// When the guest gives up (for the node's own wait).
        deadline: Option<tokio::time::Instant>,
        /// Where the task answers: the grant, `None` (a try that found the
        /// lock taken) or why not.
        reply: oneshot::Sender<Result<Option<LocalGrant>, BackendError>>,
    },
    /// Release grant `id`, or withdraw its wait (a cancelled acquire).
    Release {
        /// The request's id.
        id: u64,
    },
    /// A shared grant `new_id` for the holder of exclusive grant `id` (a
    /// downgrade: the host's node keeps covering both).
    Downgrade {
        /// The exclusive grant's request id.
        id: u64,
        /// The id of the shared grant made beside it.
        new_id: u64,
        /// Where the task answers: the shared grant, or why not.
        reply: oneshot::Sender<Result<LocalGrant, BackendError>>,
    },
    /// How many guests hold or wait (for status tools and tests).
    Count {
        /// Where the task answers.
        reply: oneshot::Sender<usize>,
    },
    /// Nothing but a wake-up: the task settles again (caches dropped).
    Flush,
    /// Whether the task keeps a node nobody holds or waits for.
    Cached {
        /// Where the task answers.
        reply: oneshot::Sender<bool>,
    },
    /// A holder saw `__REVOKE__` on the node at `path` (see `revoke`): no
    /// more local grants under it, so it goes once its holders gave up.
    Revoked {
        /// The node's path ([`OwnedNode::path`]).
        path: String,
    },
}

/// The host-local locks of one backend, by name: which lock has a running
/// [`LocalLock`] task, and the channel to it. A backend keeps one (in the
/// state its sessions share), passes it to [`ask`] and returns the same one
/// from [`NodeEngine::local_locks`], where a task leaves it when it retires.
///
/// It also bounds lock caching ([`LocalHandoff::linger`]): at most
/// [`LocalLocks::set_cache_limit`] nodes (default [`DEFAULT_CACHE_LIMIT`]) are
/// kept with nobody holding or waiting; a lock released when the cache is
/// full gives its node up at once.
pub struct LocalLocks {
    /// Each running task, by lock name.
    running: Mutex<Running>,
    next_id: AtomicU64,
    /// Nodes kept with nobody holding or waiting.
    cached: AtomicUsize,
    cache_limit: AtomicUsize,
    /// The backend shuts down: no node is cached any more.
    caches_dropped: AtomicBool,
}

impl Default for LocalLocks {
    fn default() -> Self {
        LocalLocks {
            running: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            cached: AtomicUsize::new(0),
            cache_limit: AtomicUsize::new(DEFAULT_CACHE_LIMIT),
            caches_dropped: AtomicBool::new(false),
        }
    }
}

type Running = HashMap<LockName, RunningTask>;

/// A running task as [`LocalLocks`] knows it.
struct RunningTask {
    /// The task's number.
    task: u64,
    sender: mpsc::UnboundedSender<Message>,
    /// Its state, once the task runs ([`LocalLocks::attach`]): a wait may
    /// queue there directly ([`local_lock::Shared::queue_here`]).
    state: Weak<local_lock::Shared>,
    /// `Acquire` messages sent and not yet taken by the task: a wait queues
    /// directly only when none is, so no request passes an earlier one.
    acquires_sent: Arc<AtomicUsize>,
}

impl LocalLocks {
    fn running(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new id, for a request or a task.
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Caches at most `limit` released locks from now on (0: none).
    pub fn set_cache_limit(&self, limit: usize) {
        self.cache_limit.store(limit, Ordering::Relaxed);
    }

    /// Gives every cached node up now and caches none from now on: what a
    /// backend does first when it shuts down, so its releases finish at once
    /// rather than after the cache's time.
    pub fn drop_caches(&self) {
        self.caches_dropped.store(true, Ordering::Relaxed);
        let running: Vec<mpsc::UnboundedSender<Message>> = self
            .running()
            .values()
            .map(|running| running.sender.clone())
            .collect();
        for task in running {
            // Wakes the task, whose next settle gives a cached node up.
            let _ = task.send(Message::Flush);
        }
    }

    /// Whether [`LocalLocks::drop_caches`] was called.
    pub(crate) fn caches_dropped(&self) -> bool {
        self.caches_dropped.load(Ordering::Relaxed)
    }

    /// How many released locks this host caches now.
    pub fn cached(&self) -> usize {
        self.cached.load(Ordering::Relaxed)
    }

    /// Takes a place in the cache for a node nobody holds or waits for:
    /// false when the cache is full (the node goes at once).
    pub(crate) fn try_cache(&self) -> bool {
        if self.caches_dropped() {
            return false;
        }
        let limit = self.cache_limit.load(Ordering::Relaxed);
        self.cached
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives a place in the cache back (the node is used again, or went).
    pub(crate) fn uncache(&self) {
        let _ = self
            .cached
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// Whether `name`'s task keeps a node nobody holds or waits for (a
    /// cached lock: the lock service still shows this host's node).
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn caches(&self, name: &LockName) -> bool {
        let Some(task) = self.task(name) else {
            return false;
        };
        let (reply, answer) = oneshot::channel();
        reply::ask_task(&task, Message::Cached { reply }, answer)
            .await
            .unwrap_or(false)
    }

    /// Sends `message` to `name`'s task, starting one with `start(task number,
    /// receiver)` when none runs. Returns the task's sender (releases go to it
    /// directly).
    pub(crate) fn send(
        &self,
        name: &LockName,
        message: Message,
        start: impl FnOnce(TaskStart),
    ) -> mpsc::UnboundedSender<Message> {
        let mut running = self.running();
        let acquire = matches!(message, Message::Acquire { .. });
        let message = match running.get(name) {
            Some(entry) => {
                let message = match entry.state.upgrade() {
                    Some(state) if acquire && entry.acquires_sent.load(Ordering::Acquire) == 0 => {
                        match state.queue_here(message) {
                            Ok(()) => return entry.sender.clone(),
                            Err(message) => message,
                        }
                    }
                    _ => message,
                };
                if acquire {
                    entry.acquires_sent.fetch_add(1, Ordering::AcqRel);
                }
                match entry.sender.send(message) {
                    Ok(()) => return entry.sender.clone(),
                    // The task ended between its retirement check and now.
                    Err(mpsc::error::SendError(message)) => message,
                }
            }
            None => message,
        };
        let (sender, receiver) = mpsc::unbounded_channel();
        // A fresh channel whose receiver is alive accepts the message.
        let _ = sender.send(message);
        let task = self.next_id();
        let acquires_sent = Arc::new(AtomicUsize::new(usize::from(acquire)));
        let entry = RunningTask {
            task,
            sender: sender.clone(),
            state: Weak::new(),
            acquires_sent: acquires_sent.clone(),
        };
        running.insert(name.clone(), entry);
        start(TaskStart {
            task,
            receiver,
            acquires_sent,
        });
        sender
    }

    /// Called by task `task` of `name` as it starts: waits may queue at its
    /// `state` directly from now on.
    pub(crate) fn attach(&self, name: &LockName, task: u64, state: Weak<local_lock::Shared>) {
        if let Some(entry) = self.running().get_mut(name).filter(|e| e.task == task) {
            entry.state = state;
        }
    }

    /// The running task of `name`, if any.
    pub(crate) fn task(&self, name: &LockName) -> Option<mpsc::UnboundedSender<Message>> {
        self.running().get(name).map(|entry| entry.sender.clone())
    }

    /// What `name`'s task holds, queues and waits for, read from its state,
    /// not asked of the task (which may be what is stuck): for the message of
    /// a test's bound. The watch reads `false` while the task waits for its
    /// next event (it takes the future out of its state meanwhile).
    pub fn describe(&self, name: &LockName) -> String {
        let running = self.running();
        let Some(entry) = running.get(name) else {
            return format!("no task for {name}");
        };
        let head = format!(
            "task {} of {name}: receiver {}, acquires sent untaken {}",
            entry.task,
            if entry.sender.is_closed() {
                "closed"
            } else {
                "open"
            },
            entry.acquires_sent.load(Ordering::Acquire)
        );
        match entry.state.upgrade() {
            // The registry's lock, then the state's: the order `send` takes.
            Some(state) => format!("{head}; {}", state.describe()),
            None => format!("{head}; not attached (starting, or ended)"),
        }
    }

    /// How many guests hold or wait for `name` at its task (0 when none runs).
    ///
    /// # Cancellation safety
    /// Cancel safe.
    pub async fn contenders(&self, name: &LockName) -> usize {
        let Some(task) = self.task(name) else {
            return 0;
        };
        let (reply, answer) = oneshot::channel();
        reply::ask_task(&task, Message::Count { reply }, answer)
            .await
            .unwrap_or(0)
    }

    /// Called by task `task` of `name` when it has nothing left to do: true when
    /// it may end (no message waits for it); no sender finds it afterwards.
    pub(crate) fn retire(
        &self,
        name: &LockName,
        task: u64,
        receiver: &mpsc::UnboundedReceiver<Message>,
    ) -> bool {
        let mut running = self.running();
        if !receiver.is_empty() {
            return false;
        }
        if running
            .get(name)
            .is_some_and(|running| running.task == task)
        {
            running.remove(name);
        }
        true
    }
}
