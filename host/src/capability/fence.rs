//! The fencing tokens of the exclusive locks one instance holds, shared with
//! its outbound HTTP, so the host can present them to a downstream service
//! on every request the guest sends (`--fence-header`): the service keeps the
//! highest token seen per lock and refuses lower ones, and a guest that
//! paused past its lock cannot slip a stale write through, whatever it
//! believes or forges.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::name::LockName;

/// The exclusive grants of one instance: cheap to clone, clones share.
///
/// A grant stays listed until the guest releases it or the instance ends,
/// even once lost: presenting a lost grant's token is what lets the
/// downstream service refuse the stale writer.
#[derive(Debug, Clone, Default)]
pub struct FenceTokens(Arc<Mutex<BTreeMap<u64, (LockName, u64)>>>);

impl FenceTokens {
    fn grants(&self) -> MutexGuard<'_, BTreeMap<u64, (LockName, u64)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lists grant record `record` of `name` with `token`.
    pub(crate) fn hold(&self, record: u64, name: &LockName, token: u64) {
        self.grants().insert(record, (name.clone(), token));
    }

    /// Forgets grant record `record`.
    pub(crate) fn end(&self, record: u64) {
        self.grants().remove(&record);
    }

    /// `(lock, token)` of every listed grant, sorted by lock name.
    pub fn current(&self) -> Vec<(LockName, u64)> {
        let mut held: Vec<(LockName, u64)> = self.grants().values().cloned().collect();
        held.sort();
        held
    }

    /// The header values to present: one `LOCK=TOKEN` per grant.
    pub fn header_values(&self) -> Vec<String> {
        self.current()
            .into_iter()
            .map(|(lock, token)| format!("{lock}={token}"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_grants_sorted_until_they_end() {
        let tokens = FenceTokens::default();
        let name = |n: &str| LockName::new(n).expect("valid");
        tokens.hold(2, &name("orders"), 7);
        tokens.hold(1, &name("accounts/a"), 9);
        assert_eq!(tokens.header_values(), ["accounts/a=9", "orders=7"]);
        let shared = tokens.clone();
        shared.end(1);
        assert_eq!(tokens.header_values(), ["orders=7"]);
    }
}
