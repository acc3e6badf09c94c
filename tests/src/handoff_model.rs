//! A model of host-local hand-off with lock caching, checked exhaustively by
//! stateright for small sizes (2 hosts × 2 guests × 2 locks, each guest
//! taking a lock up to twice, each host losing its session at most once).
//!
//! What it models (the rules of `host/backend/src/handoff/local_lock/`):
//! - the lock service's queue per lock: one node per host, granted in
//!   order; a node is deleted when its host gives it up, or when the
//!   server expires the host's session — only after the host told its
//!   holders `lost` (the session clock runs out on the host first);
//! - per host and lock, the task: its node (none, queued, held), its local
//!   waiters in FIFO order, its holder, the fairness bound (once a remote
//!   contender was seen, at most [`Sizes::local_grants_after_remote`] more
//!   local grants, then the node drains), lock caching (a node nobody holds or
//!   waits for is kept until another host queues, or the linger runs out);
//! - fencing tokens: `node << 8 | k` for the k-th grant under a node.
//!
//! The invariants (`always`): no two guests hold a lock at once unless one
//! was told `lost`; tokens rise from grant to grant of a lock; a cached node
//! is given up once its host saw another host queue; no more local grants
//! than the bound after a remote contender was seen; and, when nothing can
//! happen any more, no guest still waits.
//!
//! What it leaves to the tests: shared modes and downgrade, timeouts and
//! cancelled waits, the engines' own recipes and their servers (the
//! conformance kit and the fault tests), real timing. Each seeded
//! [`Mutant`] breaks one rule and must be caught.

use std::collections::VecDeque;

use stateright::{Checker, Model, Property};

/// A rule broken on purpose, to show the checker catches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mutant {
    /// The protocol as built.
    None,
    /// A release hands the lock on locally whatever the fairness bound:
    /// the remote waiter is skipped.
    ReleaseSkipsRemote,
    /// A cached node is kept when another host queues.
    CacheIgnoresQueuedHost,
    /// A waiter is granted once the node ahead of it is draining (its host
    /// decided to give it up), before that node's deletion.
    GrantBeforeDeletion,
}

/// The sizes explored.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub hosts: usize,
    pub guests: usize,
    pub locks: usize,
    /// Acquisitions per guest.
    pub turns: u8,
    /// Local grants a host still makes once a remote contender was seen
    /// (`LocalHandoff::max_handoffs`; 0 as `LocalHandoff::NONE`).
    pub local_grants_after_remote: u8,
}

/// The model: its sizes and the mutant it runs.
#[derive(Debug, Clone)]
pub struct HandoffModel {
    pub sizes: Sizes,
    pub mutant: Mutant,
}

/// A guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Guest {
    Idle {
        turns_left: u8,
    },
    Waiting {
        lock: u8,
        turns_left: u8,
    },
    Holding {
        lock: u8,
        token: u16,
        lost: bool,
        turns_left: u8,
    },
}

/// A host's node for one lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Node {
    None,
    Queued,
    Held {
        token: u8,
        grants: u8,
        /// A remote contender was seen: how many local grants since.
        remote: Option<u8>,
        draining: bool,
        cached: bool,
    },
}

/// One host's task for one lock.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Task {
    pub node: Node,
    pub waiters: VecDeque<u8>,
    pub holder: Option<u8>,
}

/// An entry of the server's queue for one lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entry {
    pub host: u8,
    /// The host gave the node up; the server has not deleted it yet.
    pub deleting: bool,
    /// The host's session ended (the host told its holders `lost`); the
    /// server has not expired it yet.
    pub expiring: bool,
}

/// Everything at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct State {
    pub guests: Vec<Vec<Guest>>,
    pub tasks: Vec<Vec<Task>>,
    pub queues: Vec<Vec<Entry>>,
    /// The next node token per lock (the server's counter).
    pub next_token: Vec<u8>,
    /// The last token granted per lock.
    pub last_token: Vec<u16>,
    /// Sessions lost per host (at most one).
    pub losses: Vec<u8>,
    /// A grant's token was not above the last one of its lock.
    pub regressed: bool,
}

/// What can happen next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Guest `g` of host `h` asks for `lock`.
    Acquire { h: u8, g: u8, lock: u8 },
    /// Guest `g` of host `h` releases what it holds.
    Release { h: u8, g: u8 },
    /// The server grants host `h`'s queued node of `lock`.
    NodeGranted { h: u8, lock: u8 },
    /// Host `h` sees another host queued behind its node of `lock`.
    RemoteSeen { h: u8, lock: u8 },
    /// Host `h`'s linger on a cached node of `lock` runs out.
    LingerOver { h: u8, lock: u8 },
    /// The server deletes the first node of `lock` its host gave up or
    /// whose session it expires.
    ServerDeletes { lock: u8, index: u8 },
    /// Host `h`'s session clock runs out: its holders read `lost`.
    SessionLost { h: u8 },
}

fn token_of(node: u8, grants: u8) -> u16 {
    (u16::from(node) << 8) | u16::from(grants)
}

impl HandoffModel {
    fn hosts(&self) -> u8 {
        self.sizes.hosts as u8
    }

    /// Grants what the task of (`h`, `lock`) can grant locally, drains or
    /// gives up or caches its node, queues a node for waiters: the task's
    /// `settle`.
    fn settle(&self, state: &mut State, h: usize, lock: usize) {
        let task = &mut state.tasks[h][lock];
        if let Node::Held {
            token,
            grants,
            remote,
            draining,
            cached,
        } = &mut task.node
        {
            if let Some(since) = remote
                && *since >= self.sizes.local_grants_after_remote
                && self.mutant != Mutant::ReleaseSkipsRemote
            {
                *draining = true;
            }
            if task.holder.is_none()
                && !*draining
                && let Some(next) = task.waiters.pop_front()
            {
                let granted = token_of(*token, *grants);
                *grants += 1;
                if let Some(since) = remote {
                    *since += 1;
                }
                *cached = false;
                task.holder = Some(next);
                if granted <= state.last_token[lock] {
                    state.regressed = true;
                }
                if let Guest::Waiting {
                    lock: l,
                    turns_left,
                } = state.guests[h][next as usize]
                {
                    state.guests[h][next as usize] = Guest::Holding {
                        lock: l,
                        token: granted,
                        lost: false,
                        turns_left,
                    };
                }
                state.last_token[lock] = state.last_token[lock].max(granted);
            }
        }
        let task = &mut state.tasks[h][lock];
        if let Node::Held {
            remote,
            draining,
            cached,
            ..
        } = &mut task.node
            && task.holder.is_none()
        {
            let give_up = *draining || (task.waiters.is_empty() && remote.is_some());
            if give_up {
                task.node = Node::None;
                mark_deleting(state, h, lock);
            } else if task.waiters.is_empty() {
                *cached = true;
            }
        }
        let task = &mut state.tasks[h][lock];
        if task.node == Node::None && !task.waiters.is_empty() {
            task.node = Node::Queued;
            state.queues[lock].push(Entry {
                host: h as u8,
                deleting: false,
                expiring: false,
            });
        }
    }

    /// Whether host `h`'s node of `lock` may be granted now: it is first in
    /// the queue (the mutant: everything ahead is merely being given up).
    fn grantable(&self, state: &State, h: usize, lock: usize) -> bool {
        let queue = &state.queues[lock];
        let Some(position) = queue
            .iter()
            .position(|e| e.host as usize == h && !e.deleting && !e.expiring)
        else {
            return false;
        };
        queue[..position].iter().all(|ahead| {
            self.mutant == Mutant::GrantBeforeDeletion
                && (ahead.deleting
                    || matches!(
                        state.tasks[ahead.host as usize][lock].node,
                        Node::Held { draining: true, .. }
                    ))
        })
    }
}

/// Host `h`'s entry of `lock` is being deleted.
fn mark_deleting(state: &mut State, h: usize, lock: usize) {
    if let Some(entry) = state.queues[lock]
        .iter_mut()
        .find(|e| e.host as usize == h && !e.deleting && !e.expiring)
    {
        entry.deleting = true;
    }
}

impl Model for HandoffModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let Sizes {
            hosts,
            guests,
            locks,
            turns,
            ..
        } = self.sizes;
        let task = Task {
            node: Node::None,
            waiters: VecDeque::new(),
            holder: None,
        };
        vec![State {
            guests: vec![vec![Guest::Idle { turns_left: turns }; guests]; hosts],
            tasks: vec![vec![task; locks]; hosts],
            queues: vec![Vec::new(); locks],
            next_token: vec![1; locks],
            last_token: vec![0; locks],
            losses: vec![0; hosts],
            regressed: false,
        }]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Action>) {
        for h in 0..self.hosts() {
            let hu = h as usize;
            for (g, guest) in state.guests[hu].iter().enumerate() {
                let g = g as u8;
                match guest {
                    Guest::Idle { turns_left } if *turns_left > 0 => {
                        for lock in 0..self.sizes.locks as u8 {
                            actions.push(Action::Acquire { h, g, lock });
                        }
                    }
                    Guest::Holding { .. } => actions.push(Action::Release { h, g }),
                    _ => {}
                }
            }
            for lock in 0..self.sizes.locks as u8 {
                let lu = lock as usize;
                match state.tasks[hu][lu].node {
                    Node::Queued if self.grantable(state, hu, lu) => {
                        actions.push(Action::NodeGranted { h, lock });
                    }
                    Node::Held { remote: None, .. }
                        if state.queues[lu]
                            .iter()
                            .any(|e| e.host != h && !e.deleting && !e.expiring) =>
                    {
                        actions.push(Action::RemoteSeen { h, lock });
                    }
                    Node::Held { cached: true, .. } => actions.push(Action::LingerOver { h, lock }),
                    _ => {}
                }
            }
            if state.losses[hu] == 0 {
                actions.push(Action::SessionLost { h });
            }
        }
        for (lock, queue) in state.queues.iter().enumerate() {
            if let Some(index) = queue.iter().position(|e| e.deleting || e.expiring) {
                actions.push(Action::ServerDeletes {
                    lock: lock as u8,
                    index: index as u8,
                });
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut state = last.clone();
        match action {
            Action::Acquire { h, g, lock } => {
                let (hu, gu, lu) = (h as usize, g as usize, lock as usize);
                let Guest::Idle { turns_left } = state.guests[hu][gu] else {
                    return None;
                };
                state.guests[hu][gu] = Guest::Waiting {
                    lock,
                    turns_left: turns_left - 1,
                };
                state.tasks[hu][lu].waiters.push_back(g);
                self.settle(&mut state, hu, lu);
            }
            Action::Release { h, g } => {
                let (hu, gu) = (h as usize, g as usize);
                let Guest::Holding {
                    lock, turns_left, ..
                } = state.guests[hu][gu]
                else {
                    return None;
                };
                state.guests[hu][gu] = Guest::Idle { turns_left };
                let lu = lock as usize;
                if state.tasks[hu][lu].holder == Some(g) {
                    state.tasks[hu][lu].holder = None;
                }
                self.settle(&mut state, hu, lu);
            }
            Action::NodeGranted { h, lock } => {
                let (hu, lu) = (h as usize, lock as usize);
                let token = state.next_token[lu];
                state.next_token[lu] += 1;
                state.tasks[hu][lu].node = Node::Held {
                    token,
                    grants: 0,
                    remote: None,
                    draining: false,
                    cached: false,
                };
                self.settle(&mut state, hu, lu);
            }
            Action::RemoteSeen { h, lock } => {
                let (hu, lu) = (h as usize, lock as usize);
                if let Node::Held { remote, cached, .. } = &mut state.tasks[hu][lu].node {
                    *remote = Some(0);
                    if self.mutant == Mutant::CacheIgnoresQueuedHost {
                        // Seen, and ignored: the node stays cached.
                        return Some(state);
                    }
                    *cached = false;
                }
                self.settle(&mut state, hu, lu);
            }
            Action::LingerOver { h, lock } => {
                let (hu, lu) = (h as usize, lock as usize);
                state.tasks[hu][lu].node = Node::None;
                mark_deleting(&mut state, hu, lu);
                self.settle(&mut state, hu, lu);
            }
            Action::ServerDeletes { lock, index } => {
                state.queues[lock as usize].remove(index as usize);
            }
            Action::SessionLost { h } => {
                let hu = h as usize;
                state.losses[hu] += 1;
                for guest in &mut state.guests[hu] {
                    if let Guest::Holding { lost, .. } = guest {
                        *lost = true;
                    }
                }
                for (lu, queue) in state.queues.iter_mut().enumerate() {
                    for entry in queue.iter_mut().filter(|e| e.host == h) {
                        entry.expiring = true;
                    }
                    let task = &mut state.tasks[hu][lu];
                    task.node = Node::None;
                    task.holder = None;
                }
                for lu in 0..self.sizes.locks {
                    self.settle(&mut state, hu, lu);
                }
            }
        }
        Some(state)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always("one holder at a time", |_, state: &State| {
                one_holder_at_a_time(state)
            }),
            Property::always("tokens rise", |_, state: &State| !state.regressed),
            Property::always(
                "a cached node goes once another host queued",
                |_, state: &State| {
                    state.tasks.iter().flatten().all(|t| {
                        !matches!(
                            t.node,
                            Node::Held {
                                cached: true,
                                remote: Some(_),
                                ..
                            }
                        )
                    })
                },
            ),
            Property::always(
                "the fairness bound holds",
                |model: &HandoffModel, state: &State| {
                    state.tasks.iter().flatten().all(|t| match t.node {
                        Node::Held {
                            remote: Some(since),
                            ..
                        } => since <= model.sizes.local_grants_after_remote,
                        _ => true,
                    })
                },
            ),
            Property::always(
                "no guest waits when nothing can happen",
                |model: &HandoffModel, state: &State| {
                    let mut next = Vec::new();
                    model.actions(state, &mut next);
                    !next.is_empty()
                        || state
                            .guests
                            .iter()
                            .flatten()
                            .all(|g| !matches!(g, Guest::Waiting { .. }))
                },
            ),
        ]
    }
}

/// No two guests hold one lock at once unless one was told `lost`, and the
/// tokens of two such holds differ.
fn one_holder_at_a_time(state: &State) -> bool {
    let holds: Vec<(u8, u16)> = state
        .guests
        .iter()
        .flatten()
        .filter_map(|g| match g {
            Guest::Holding {
                lock,
                token,
                lost: false,
                ..
            } => Some((*lock, *token)),
            _ => None,
        })
        .collect();
    holds
        .iter()
        .enumerate()
        .all(|(i, (lock, _))| holds[i + 1..].iter().all(|(other, _)| other != lock))
}

/// Checks `model` exhaustively: the properties it breaks (none for the
/// protocol as built) and how many states it explored.
pub fn check(model: HandoffModel) -> (Vec<&'static str>, usize) {
    let checker = model.checker().spawn_bfs().join();
    let broken = checker
        .discoveries()
        .into_keys()
        .collect::<Vec<&'static str>>();
    (broken, checker.unique_state_count())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 hosts × 2 guests × 2 locks, each guest taking a lock once, no
    /// local grant once another host waits (with one guest behind the
    /// holder, a larger bound is never reached at these sizes).
    const SIZES: Sizes = Sizes {
        hosts: 2,
        guests: 2,
        locks: 2,
        turns: 1,
        local_grants_after_remote: 0,
    };

    fn model(mutant: Mutant) -> HandoffModel {
        HandoffModel {
            sizes: SIZES,
            mutant,
        }
    }

    #[test]
    fn the_protocol_keeps_every_invariant_in_every_reachable_state() {
        let (broken, states) = check(model(Mutant::None));
        eprintln!("{{\"metric\":\"handoff_model\",\"states\":{states}}}");
        assert!(broken.is_empty(), "broken: {broken:?}");
        assert!(
            states > 10_000,
            "only {states} states: the model explores too little"
        );
    }

    #[test]
    fn each_seeded_mutant_is_caught() {
        for (mutant, property) in [
            (Mutant::ReleaseSkipsRemote, "the fairness bound holds"),
            (
                Mutant::CacheIgnoresQueuedHost,
                "a cached node goes once another host queued",
            ),
            (Mutant::GrantBeforeDeletion, "one holder at a time"),
        ] {
            let (broken, states) = check(model(mutant));
            assert!(
                broken.contains(&property),
                "{mutant:?} went unseen in {states} states (broken: {broken:?})"
            );
        }
    }
}
