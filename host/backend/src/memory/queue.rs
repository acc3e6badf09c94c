//! One lock's fair FIFO queue: who holds it and who waits, in arrival order.
//!
//! Pure data, no locking or waking: the backend calls [`Queue::grant_ready`] after
//! every change and wakes whoever it returns.

use std::collections::VecDeque;

use crate::Mode;

/// One request in a queue.
#[derive(Debug)]
pub(super) struct Entry {
    /// Backend-wide unique id of the request.
    pub id: u64,
    /// The session that made it.
    pub session: u64,
    pub mode: Mode,
    /// `Some(token)` once granted.
    pub token: Option<u64>,
}

/// Requests for one name, oldest first.
#[derive(Debug, Default)]
pub(super) struct Queue {
    entries: VecDeque<Entry>,
    /// `Some(n)`: the name is a semaphore of `n` permits, its entries permits
    /// (their mode is ignored); `None`: a lock.
    permits: Option<u32>,
}

impl Queue {
    /// A semaphore's queue, of `permits` permits.
    pub(super) fn semaphore(permits: u32) -> Self {
        Queue {
            entries: VecDeque::new(),
            permits: Some(permits),
        }
    }

    /// `Some(n)` for a semaphore of `n` permits, `None` for a lock.
    pub(super) fn permits(&self) -> Option<u32> {
        self.permits
    }

    pub(super) fn push(&mut self, entry: Entry) {
        self.entries.push_back(entry);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    pub(super) fn get(&self, id: u64) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// Puts `entry` right behind request `after` (a downgrade's shared grant beside
    /// its exclusive one). False when `after` is not queued.
    pub(super) fn insert_after(&mut self, after: u64, entry: Entry) -> bool {
        let Some(at) = self.entries.iter().position(|e| e.id == after) else {
            return false;
        };
        self.entries.insert(at + 1, entry);
        true
    }

    /// Removes request `id`; returns it if it was there.
    pub(super) fn remove(&mut self, id: u64) -> Option<Entry> {
        let at = self.entries.iter().position(|e| e.id == id)?;
        self.entries.remove(at)
    }

    /// Grants every waiting request that no earlier request conflicts with, giving
    /// each the next token from `next_token`; returns the ids granted.
    ///
    /// Exclusive: granted only at the head. Shared: granted while no exclusive
    /// request (held or waiting) is ahead of it, so a waiting writer holds back the
    /// readers that came after it.
    ///
    /// A semaphore of `n` permits grants waiters in arrival order while fewer
    /// than `n` hold a permit.
    pub(super) fn grant_ready(&mut self, next_token: &mut u64) -> Vec<u64> {
        if let Some(permits) = self.permits {
            return self.grant_permits(permits, next_token);
        }
        let mut granted = Vec::new();
        for (index, entry) in self.entries.iter_mut().enumerate() {
            let grantable = match entry.mode {
                Mode::Exclusive => index == 0,
                Mode::Shared => true,
            };
            if !grantable {
                break;
            }
            if entry.token.is_none() {
                *next_token += 1;
                entry.token = Some(*next_token);
                granted.push(entry.id);
            }
            if entry.mode == Mode::Exclusive {
                break;
            }
        }
        granted
    }

    fn grant_permits(&mut self, permits: u32, next_token: &mut u64) -> Vec<u64> {
        let holders = self.entries.iter().filter(|e| e.token.is_some()).count();
        let free = usize::try_from(permits)
            .unwrap_or(usize::MAX)
            .saturating_sub(holders);
        let mut granted = Vec::new();
        for entry in self.entries.iter_mut().filter(|e| e.token.is_none()) {
            if granted.len() == free {
                break;
            }
            *next_token += 1;
            entry.token = Some(*next_token);
            granted.push(entry.id);
        }
        granted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, mode: Mode) -> Entry {
        Entry {
            id,
            session: id,
            mode,
            token: None,
        }
    }

    #[test]
    fn writer_waits_for_readers_and_holds_back_later_readers() {
        let mut q = Queue::default();
        let mut token = 0;
        q.push(entry(1, Mode::Shared));
        q.push(entry(2, Mode::Shared));
        q.push(entry(3, Mode::Exclusive));
        q.push(entry(4, Mode::Shared));
        assert_eq!(q.grant_ready(&mut token), vec![1, 2]);
        q.remove(1);
        assert_eq!(q.grant_ready(&mut token), Vec::<u64>::new());
        q.remove(2);
        assert_eq!(q.grant_ready(&mut token), vec![3]);
        q.remove(3);
        assert_eq!(q.grant_ready(&mut token), vec![4]);
        assert_eq!(token, 4, "one token per grant");
    }

    #[test]
    fn a_semaphore_grants_its_permits_in_arrival_order() {
        let mut q = Queue::semaphore(2);
        let mut token = 0;
        for id in 1..=4 {
            q.push(entry(id, Mode::Shared));
        }
        assert_eq!(q.grant_ready(&mut token), vec![1, 2]);
        assert_eq!(q.grant_ready(&mut token), Vec::<u64>::new());
        q.remove(2);
        assert_eq!(q.grant_ready(&mut token), vec![3]);
        q.remove(1);
        q.remove(3);
        assert_eq!(q.grant_ready(&mut token), vec![4]);
        assert_eq!(token, 4, "one token per permit, increasing in grant order");
    }

    #[test]
    fn exclusive_requests_are_served_in_arrival_order() {
        let mut q = Queue::default();
        let mut token = 10;
        for id in 1..=3 {
            q.push(entry(id, Mode::Exclusive));
        }
        let mut order = Vec::new();
        for _ in 0..3 {
            let granted = q.grant_ready(&mut token);
            assert_eq!(granted.len(), 1);
            order.push(granted[0]);
            q.remove(granted[0]);
        }
        assert_eq!(order, vec![1, 2, 3]);
        assert_eq!(token, 13);
    }
}
