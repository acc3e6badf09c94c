//! The `locks` interface's state of one instance: each lock grant the
//! instance holds, with how many of its handles use it, and which grants
//! serve each name (per mode: re-entrant acquires join them; after a
//! downgrade a name has both).

use std::collections::{HashMap, HashSet};

use crate::backend::{Grant, GrantId, Mode};
use crate::name::LockName;

/// One backend grant of this instance and how many live handles use it.
pub(super) struct GrantRecord {
    pub(super) name: LockName,
    pub(super) mode: Mode,
    pub(super) grant: Grant,
    pub(super) handles: usize,
}

/// The records of one name: an exclusive grant, a shared one, or both (downgrade).
#[derive(Default)]
struct Slots {
    exclusive: Option<u64>,
    shared: Option<u64>,
}

impl Slots {
    fn slot(&mut self, mode: Mode) -> &mut Option<u64> {
        match mode {
            Mode::Exclusive => &mut self.exclusive,
            Mode::Shared => &mut self.shared,
        }
    }

    fn is_empty(&self) -> bool {
        self.exclusive.is_none() && self.shared.is_none()
    }
}

/// The lock grants of one instance, by record number.
#[derive(Default)]
pub(super) struct LockRecords {
    records: HashMap<u64, GrantRecord>,
    /// The records currently serving each name, per mode.
    by_name: HashMap<LockName, Slots>,
    /// Records ended by the host (`release_all`): their handles report
    /// `released`.
    ended_by_host: HashSet<u64>,
    next: u64,
}

impl LockRecords {
    /// The record `id`, while it stands.
    pub(super) fn get(&self, id: u64) -> Option<&GrantRecord> {
        self.records.get(&id)
    }

    /// The record `id`, to count a handle on it or off it.
    pub(super) fn get_mut(&mut self, id: u64) -> Option<&mut GrantRecord> {
        self.records.get_mut(&id)
    }

    /// Keeps `grant` of `name` in `mode` with one handle, serving the name in
    /// that mode from now on; its record number.
    pub(super) fn insert(&mut self, name: LockName, mode: Mode, grant: Grant) -> u64 {
        self.next += 1;
        let id = self.next;
        *self.by_name.entry(name.clone()).or_default().slot(mode) = Some(id);
        self.records.insert(
            id,
            GrantRecord {
                name,
                mode,
                grant,
                handles: 1,
            },
        );
        id
    }

    /// Removes record `id` (it no longer serves its name).
    pub(super) fn remove(&mut self, id: u64) -> Option<GrantRecord> {
        let record = self.records.remove(&id)?;
        if let Some(slots) = self.by_name.get_mut(&record.name) {
            let slot = slots.slot(record.mode);
            if *slot == Some(id) {
                *slot = None;
            }
            if slots.is_empty() {
                self.by_name.remove(&record.name);
            }
        }
        Some(record)
    }

    /// Every record's number.
    pub(super) fn ids(&self) -> Vec<u64> {
        self.records.keys().copied().collect()
    }

    /// Marks record `id` as ended by the host: its handles report `released`.
    pub(super) fn end_by_host(&mut self, id: u64) {
        self.ended_by_host.insert(id);
    }

    /// Whether the host ended record `id`.
    pub(super) fn ended_by_host(&self, id: u64) -> bool {
        self.ended_by_host.contains(&id)
    }

    /// Whether some lock grant serves `name`.
    pub(super) fn holds(&self, name: &LockName) -> bool {
        self.by_name.contains_key(name)
    }

    /// The records serving `name` (exclusive, shared), once those whose
    /// grant `is_lost` says is lost stop serving it: old handles keep
    /// reporting `lost`, new requests start afresh.
    pub(super) fn serving(
        &mut self,
        name: &LockName,
        is_lost: impl Fn(GrantId) -> bool,
    ) -> (Option<u64>, Option<u64>) {
        let Some(slots) = self.by_name.get_mut(name) else {
            return (None, None);
        };
        for mode in [Mode::Exclusive, Mode::Shared] {
            let slot = slots.slot(mode);
            let lost = slot.is_some_and(|id| {
                self.records
                    .get(&id)
                    .is_none_or(|record| is_lost(record.grant.id))
            });
            if lost {
                *slot = None;
            }
        }
        let serving = (slots.exclusive, slots.shared);
        if slots.is_empty() {
            self.by_name.remove(name);
        }
        serving
    }
}
