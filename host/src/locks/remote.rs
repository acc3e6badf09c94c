//! Deadlocks across hosts, best effort: a background scan of the engine's
//! data.
//!
//! While any guest of this host waits, a task wakes every [`SCAN_EVERY`]
//! and asks the engine for the contenders
//! ([`Contention::contenders`](crate::backend::Contention::contenders)) of
//! at most [`MAX_SCANNED`] locks this host waits for or holds (the waited-for
//! first), at most [`MAX_LISTED_CONTENDERS`] each, each call bounded by
//! [`CALL_LIMIT`]. From the contenders' owner labels (a ZooKeeper node's
//! data names its host and owner; etcd names a lease, so there a party is a
//! whole host) it builds a wait-for graph (a waiter → each holder in a
//! conflicting mode, as on one host) and reports each cycle that involves a
//! party other than this host's sessions, once while it lasts: in the
//! snapshot (`scope: "hosts"`, `broken: None`), the cycle count and the log.
//! It breaks nothing: which host's guest should give up cannot be agreed on
//! without a protocol between hosts.
//!
//! **Bound:** a cycle across hosts whose locks are among the scanned ones is
//! reported within [`SCAN_EVERY`] plus one round of calls (at most
//! [`MAX_SCANNED`] × [`CALL_LIMIT`], in practice a few round trips) after
//! it closes. Cycles through more locks than that, through locks beyond the
//! first [`MAX_LISTED_CONTENDERS`] contenders, or through a party the engine
//! does not label apart (hosts sharing a label; host-local hand-off, which
//! shows one node per host and lock) may be missed.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::graph;
use super::state::{EngineId, LockKey};
use super::{LockTable, Shared, lock};
use crate::backend::{Contender, LockSession, MAX_LISTED_CONTENDERS};
use crate::name::LockName;

/// How often the scan runs while something waits.
pub const SCAN_EVERY: Duration = Duration::from_secs(1);
/// The most locks one round asks the engine about.
pub const MAX_SCANNED: usize = 64;
/// The longest one `contenders` call may take before it is skipped.
pub const CALL_LIMIT: Duration = Duration::from_secs(2);

/// The owner label of the sessions the scan reads with.
const SCAN_OWNER: &str = "wardlock lock table";

/// Starts the scan task (the caller saw none running); without a tokio
/// runtime there is nothing to run it on, and the next wait tries again.
pub(super) fn spawn(table: &LockTable) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        table.shared.with(|state| state.scanning = false);
        return;
    };
    runtime.spawn(scan(Arc::downgrade(&table.shared)));
}

/// The scan's rounds, until nothing waits or the table is gone.
async fn scan(table: Weak<Shared>) {
    let mut sessions: HashMap<EngineId, Box<dyn LockSession>> = HashMap::new();
    let mut reported: HashSet<(Vec<String>, Vec<String>)> = HashSet::new();
    loop {
        tokio::time::sleep(SCAN_EVERY).await;
        let Some(shared) = table.upgrade() else {
            return;
        };
        let Some((keys, local)) = shared.with(|state| {
            if state.waits.is_empty() {
                state.scanning = false;
                return None;
            }
            let waited: Vec<LockKey> = state.waits.values().map(|w| w.key.clone()).collect();
            let held = state.locks.keys().cloned();
            let mut keys: Vec<LockKey> = Vec::new();
            for key in waited.into_iter().chain(held) {
                if keys.len() == MAX_SCANNED {
                    break;
                }
                if !keys.contains(&key) {
                    keys.push(key);
                }
            }
            let local: HashSet<String> = state
                .sessions
                .values()
                .map(|s| s.owner.to_string())
                .collect();
            Some((keys, local))
        }) else {
            return;
        };
        let mut listed: Vec<(String, Vec<Contender>)> = Vec::new();
        for (name, engine) in keys {
            let Ok(lock_name) = LockName::new(&name) else {
                continue;
            };
            let session = match sessions.entry(engine) {
                Entry::Occupied(open) => open.into_mut(),
                Entry::Vacant(slot) => {
                    let backend = lock(&shared.engines).backends.get(engine).cloned();
                    let Some(backend) = backend else { continue };
                    slot.insert(backend.open_session(SCAN_OWNER))
                }
            };
            // An engine that cannot list contenders shows no remote cycle.
            let Ok(contention) = session.contention() else {
                continue;
            };
            let call = contention.contenders(&lock_name, MAX_LISTED_CONTENDERS);
            if let Ok(Ok(answer)) = tokio::time::timeout(CALL_LIMIT, call).await {
                listed.push((name, answer.listed));
            }
        }
        let now: HashSet<_> = cycles_across(&listed, &local).into_iter().collect();
        for (parties, locks) in now.difference(&reported) {
            tracing::warn!(
                parties = ?parties,
                locks = ?locks,
                "wait-for cycle across hosts (reported, not broken)"
            );
            shared.with(|state| state.record_cycle("hosts", parties.clone(), locks.clone(), None));
        }
        reported = now;
    }
}

/// The cycles in the engine's listing of several locks that involve a
/// party not in `local` (this host's owner labels): each as its parties and
/// the lock each waits for.
pub(super) fn cycles_across(
    listed: &[(String, Vec<Contender>)],
    local: &HashSet<String>,
) -> Vec<(Vec<String>, Vec<String>)> {
    let mut edges: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (name, contenders) in listed {
        for waiter in contenders.iter().filter(|c| !c.holds) {
            for holder in contenders.iter().filter(|c| c.holds) {
                if holder.owner != waiter.owner && graph::conflicts(waiter.mode, holder.mode) {
                    edges
                        .entry(waiter.owner.clone())
                        .or_default()
                        .push((name.clone(), holder.owner.clone()));
                }
            }
        }
    }
    let parties: Vec<String> = edges.keys().cloned().collect();
    graph::all_cycles(&parties, |p| edges.get(p).cloned().unwrap_or_default())
        .into_iter()
        .filter(|cycle| cycle.iter().any(|step| !local.contains(&step.party)))
        .map(|cycle| {
            cycle
                .into_iter()
                .map(|step| (step.party, step.wait))
                .unzip()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Mode;

    fn c(owner: &str, mode: Mode, holds: bool) -> Contender {
        Contender {
            owner: owner.into(),
            mode,
            holds,
            token: None,
            node: None,
        }
    }

    #[test]
    fn a_cycle_with_another_hosts_party_is_reported() {
        let listed = vec![
            (
                "x".to_owned(),
                vec![
                    c("here#1", Mode::Exclusive, true),
                    c("there#1", Mode::Exclusive, false),
                ],
            ),
            (
                "y".to_owned(),
                vec![
                    c("there#1", Mode::Exclusive, true),
                    c("here#1", Mode::Exclusive, false),
                ],
            ),
        ];
        let local = HashSet::from(["here#1".to_owned()]);
        let cycles = cycles_across(&listed, &local);
        assert_eq!(cycles.len(), 1);
        let (parties, locks) = &cycles[0];
        assert_eq!(parties.len(), 2);
        assert_eq!(locks.len(), 2);
        // A cycle among this host's own sessions is the host's to break.
        let local = HashSet::from(["here#1".to_owned(), "there#1".to_owned()]);
        assert!(cycles_across(&listed, &local).is_empty());
    }

    #[test]
    fn converging_and_shared_waits_are_never_reported() {
        let listed = vec![
            (
                "x".to_owned(),
                vec![
                    c("h", Mode::Exclusive, true),
                    c("a", Mode::Exclusive, false),
                    c("b", Mode::Shared, false),
                ],
            ),
            (
                "y".to_owned(),
                vec![c("a", Mode::Shared, true), c("h", Mode::Shared, false)],
            ),
        ];
        assert!(cycles_across(&listed, &HashSet::new()).is_empty());
    }
}
