//! The in-memory guarded store ([`crate::guarded`]): entries beside
//! the lock table, written under the same mutex as the queues, so the check
//! that the writer's grant stands and the write are one step.

use std::collections::BTreeMap;

use super::State;
use crate::guarded::{check_value, listed_keys, not_exclusive};
use crate::name::LockName;
use crate::{BackendError, GuardedEntry, GuardedKey, Mode};

/// Every lock's guarded entries, by name and key.
#[derive(Default)]
pub(super) struct GuardedStore {
    entries: BTreeMap<(LockName, String), GuardedEntry>,
    /// The revision of the latest write (backend-wide).
    revision: u64,
}

impl State {
    /// Whether request `id` holds `name` exclusively now (granted, a lock
    /// rather than a permit, not lost): its token if so.
    pub(super) fn standing_exclusive(&self, name: &LockName, id: u64) -> Result<u64, BackendError> {
        let queue = self.queues.get(name).ok_or(BackendError::Lost)?;
        if queue.permits().is_some() {
            return Err(not_exclusive(&format!("a permit of semaphore \"{name}\"")));
        }
        let entry = queue.get(id).ok_or(BackendError::Lost)?;
        let token = entry.token.ok_or(BackendError::Lost)?;
        if entry.mode != Mode::Exclusive {
            return Err(not_exclusive(&format!("a shared holder of \"{name}\"")));
        }
        if self.lost.contains(&id) {
            return Err(BackendError::Lost);
        }
        Ok(token)
    }

    /// Writes `value` under `key` of `name` if grant `id` holds `name`
    /// exclusively: the write's revision.
    pub(super) fn guarded_put(
        &mut self,
        name: &LockName,
        id: u64,
        key: &GuardedKey,
        value: &[u8],
    ) -> Result<u64, BackendError> {
        check_value(value)?;
        let token = self.standing_exclusive(name, id)?;
        let name = &super::election::store_name(name);
        let store = &mut self.guarded;
        store.revision += 1;
        let entry = GuardedEntry {
            value: value.to_vec(),
            token,
            revision: store.revision,
        };
        store
            .entries
            .insert((name.clone(), key.as_str().to_owned()), entry);
        Ok(store.revision)
    }

    /// Deletes `key` of `name` if grant `id` holds `name` exclusively: true
    /// when there was an entry.
    pub(super) fn guarded_delete(
        &mut self,
        name: &LockName,
        id: u64,
        key: &GuardedKey,
    ) -> Result<bool, BackendError> {
        self.standing_exclusive(name, id)?;
        let name = &super::election::store_name(name);
        let removed = self
            .guarded
            .entries
            .remove(&(name.clone(), key.as_str().to_owned()));
        Ok(removed.is_some())
    }

    /// The entry `key` of `name`.
    pub(super) fn guarded_get(&self, name: &LockName, key: &GuardedKey) -> Option<GuardedEntry> {
        self.guarded
            .entries
            .get(&(name.clone(), key.as_str().to_owned()))
            .cloned()
    }

    /// The keys of `name` starting with `prefix`, sorted, at most `limit`.
    pub(super) fn guarded_keys(&self, name: &LockName, prefix: &str, limit: u32) -> Vec<String> {
        let from = (name.clone(), prefix.to_owned());
        let keys = self
            .guarded
            .entries
            .range(from..)
            .map(|((entry_name, key), _)| (entry_name, key))
            .take_while(|(entry_name, key)| *entry_name == name && key.starts_with(prefix))
            .map(|(_, key)| key.clone());
        listed_keys(keys, prefix, limit)
    }
}
