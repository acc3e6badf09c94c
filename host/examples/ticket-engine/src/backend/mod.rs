//! The ticket engine: one FIFO [`queue::Queue`] per lock name behind one mutex,
//! shared by every session of a [`TicketBackend`].
//!
//! Waiters are woken precisely: each waiting ticket has a oneshot channel, and
//! whoever changes a queue (a release, a withdrawn wait) grants what became
//! grantable and sends each new holder its fencing token. Nobody polls.

mod queue;
mod session;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;
use wardlock_host::{BackendError, LockBackend, LockName, LockSession, Mode};

use self::queue::{Queue, Ticket};
use self::session::TicketSession;

/// How a [`TicketBackend`] behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketConfig {
    /// How many requests may wait (not counting holders) for one lock name;
    /// one more waiting acquire is refused at once with
    /// [`BackendError::Unavailable`], so a stuck holder cannot make the queue
    /// grow without bound.
    pub max_waiters: usize,
}

impl Default for TicketConfig {
    fn default() -> Self {
        TicketConfig {
            max_waiters: 10_000,
        }
    }
}

/// An in-process lock engine of FIFO ticket queues. Cheap to clone; clones
/// share the same locks.
#[derive(Clone)]
pub struct TicketBackend {
    engine: Arc<Engine>,
}

impl TicketBackend {
    /// An engine with no locks.
    pub fn new(config: TicketConfig) -> Self {
        TicketBackend {
            engine: Arc::new(Engine {
                config,
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// How many requests (holders and waiters) are queued for `name`: what a
    /// test or a probe waits on to know that a waiter has joined the queue.
    pub fn queue_len(&self, name: &LockName) -> usize {
        self.engine.state().queues.get(name).map_or(0, Queue::len)
    }
}

impl LockBackend for TicketBackend {
    /// Opening is a pointer copy: the engine keeps no per-session state of its
    /// own, so the owner description is not needed.
    fn open_session(&self, _owner: &str) -> Box<dyn LockSession> {
        Box::new(TicketSession::new(self.engine.clone()))
    }

    fn kind(&self) -> &'static str {
        crate::NAME
    }
}

/// What every session of one backend shares.
struct Engine {
    config: TicketConfig,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    queues: HashMap<LockName, Queue>,
    /// How to tell each waiting ticket its token, by ticket id.
    wakers: HashMap<u64, oneshot::Sender<u64>>,
    next_id: u64,
    /// Engine-wide, so tokens strictly increase across names and sessions.
    next_token: u64,
}

/// What [`Engine::enter`] did with a request.
enum Entry {
    /// Granted at once.
    Granted { id: u64, token: u64 },
    /// Queued; `woken` receives the token when it is granted.
    Waiting {
        id: u64,
        woken: oneshot::Receiver<u64>,
    },
    /// Not granted and, as asked, not queued.
    WouldWait,
}

impl Engine {
    /// Locks the state. Every change to it completes before the lock is let
    /// go, so a panic elsewhere cannot leave it half-done: recover from poison.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Grants `name` in `mode` at once if FIFO allows; otherwise queues the
    /// request when `may_wait`, unless the queue is full.
    fn enter(&self, name: &LockName, mode: Mode, may_wait: bool) -> Result<Entry, BackendError> {
        let mut state = self.state();
        let state = &mut *state;
        let queue = state.queues.entry(name.clone()).or_default();
        state.next_id += 1;
        let id = state.next_id;
        if queue.grantable_now(mode) {
            state.next_token += 1;
            let token = state.next_token;
            queue.push(Ticket {
                id,
                mode,
                token: Some(token),
            });
            return Ok(Entry::Granted { id, token });
        }
        let waiters = queue.waiters();
        if !may_wait || waiters >= self.config.max_waiters {
            // A queue that cannot grant at once is never empty: nothing to drop.
            return if may_wait {
                Err(BackendError::Unavailable(format!(
                    "ticket queue of \"{name}\" is full ({waiters} waiters)"
                )))
            } else {
                Ok(Entry::WouldWait)
            };
        }
        queue.push(Ticket {
            id,
            mode,
            token: None,
        });
        let (wake, woken) = oneshot::channel();
        state.wakers.insert(id, wake);
        Ok(Entry::Waiting { id, woken })
    }

    /// Removes ticket `id` of `name`, held or waiting, and wakes whoever that
    /// lets in.
    fn withdraw(&self, name: &LockName, id: u64) {
        self.state().withdraw(name, id);
    }
}

impl State {
    fn withdraw(&mut self, name: &LockName, id: u64) {
        self.wakers.remove(&id);
        if let Some(queue) = self.queues.get_mut(name) {
            queue.remove(id);
            self.regrant(name);
        }
    }

    /// Grants what became grantable in `name`'s queue and sends the tokens;
    /// drops the queue once it is empty. A ticket whose waiter is gone (its
    /// drop guard always withdraws it first, so this is only a safety net) is
    /// removed again rather than left holding the lock.
    fn regrant(&mut self, name: &LockName) {
        while let Some(queue) = self.queues.get_mut(name) {
            if queue.is_empty() {
                self.queues.remove(name);
                return;
            }
            let mut orphaned = Vec::new();
            for (id, token) in queue.grant_ready(&mut self.next_token) {
                let sent = self
                    .wakers
                    .remove(&id)
                    .is_some_and(|w| w.send(token).is_ok());
                if !sent {
                    orphaned.push(id);
                }
            }
            if orphaned.is_empty() {
                return;
            }
            for id in orphaned {
                queue.remove(id);
            }
        }
    }
}
