//! One lock's queue of tickets: pure data, no locking and no waking.
//!
//! Keeping the queue free of channels and mutexes lets the granting rule be
//! read (and tested) on its own; the engine around it decides whom to wake.
//!
//! Invariant: the granted tickets always form a prefix of the queue. A ticket
//! is granted only when everything ahead of it is granted, and removing a
//! ticket never reorders the others, so holders stay in front of waiters.

use std::collections::VecDeque;

use wardlock_host::Mode;

/// One request for a lock, held or waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ticket {
    /// Engine-wide unique id; also the [`wardlock_host::GrantId`] once granted.
    pub id: u64,
    pub mode: Mode,
    /// The fencing token, `Some` once granted.
    pub token: Option<u64>,
}

/// The tickets of one lock name, oldest first.
#[derive(Debug, Default)]
pub(super) struct Queue {
    tickets: VecDeque<Ticket>,
}

impl Queue {
    /// Whether a new `mode` request would be granted at once: strict FIFO
    /// means nobody may wait ahead of it, and every holder must be compatible
    /// (an exclusive request needs an empty queue; a shared one needs only
    /// shared holders and no waiter).
    pub(super) fn grantable_now(&self, mode: Mode) -> bool {
        match mode {
            Mode::Exclusive => self.tickets.is_empty(),
            Mode::Shared => self
                .tickets
                .iter()
                .all(|t| t.token.is_some() && t.mode == Mode::Shared),
        }
    }

    /// Appends a ticket (granted already when `token` is `Some`).
    pub(super) fn push(&mut self, ticket: Ticket) {
        self.tickets.push_back(ticket);
    }

    /// Removes ticket `id`, held or waiting; returns it if it was there.
    pub(super) fn remove(&mut self, id: u64) -> Option<Ticket> {
        let at = self.tickets.iter().position(|t| t.id == id)?;
        self.tickets.remove(at)
    }

    /// Holders and waiters together.
    pub(super) fn len(&self) -> usize {
        self.tickets.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.tickets.is_empty()
    }

    /// Tickets not granted yet (what `max_waiters` limits).
    pub(super) fn waiters(&self) -> usize {
        self.tickets.iter().filter(|t| t.token.is_none()).count()
    }

    /// Grants, front to back, every waiting ticket whose predecessors are all
    /// granted and compatible with it, taking each token from `next_token`.
    /// Returns `(id, token)` of each new grant, in grant order.
    ///
    /// An exclusive holder stops the scan; an exclusive waiter is granted only
    /// with nobody ahead and then stops it too, so a queued writer holds back
    /// every reader behind it, and a run of readers is granted together.
    pub(super) fn grant_ready(&mut self, next_token: &mut u64) -> Vec<(u64, u64)> {
        let mut granted = Vec::new();
        let mut anyone_ahead = false;
        for ticket in &mut self.tickets {
            if ticket.token.is_none() {
                if ticket.mode == Mode::Exclusive && anyone_ahead {
                    break;
                }
                *next_token += 1;
                ticket.token = Some(*next_token);
                granted.push((ticket.id, *next_token));
            }
            if ticket.mode == Mode::Exclusive {
                break;
            }
            anyone_ahead = true;
        }
        granted
    }
}
