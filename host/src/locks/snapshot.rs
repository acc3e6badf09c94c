//! What [`LockTable::snapshot`](super::LockTable::snapshot) returns: plain
//! data, serialized as is by the admin API (`/api/locks`).

use serde::Serialize;

/// The locks this host holds or waits for, at one moment.
#[derive(Debug, Clone, Serialize)]
pub struct LocksSnapshot {
    /// The host's label ([`LockTable::new`](super::LockTable::new)).
    pub host: String,
    /// The table's change counter when the snapshot was taken (what
    /// [`LockTable::changes`](super::LockTable::changes) publishes): equal
    /// versions are equal tables.
    pub version: u64,
    /// Every lock with a holder or a waiter of this host, sorted by name
    /// (then engine), filtered by the prefix asked for.
    pub locks: Vec<LockEntry>,
    /// The wait-for cycles found lately, newest first (at most
    /// [`RECENT_CYCLES`](super::RECENT_CYCLES)).
    pub cycles: Vec<Cycle>,
    /// How many cycles were found since the table was made (`scope` host and
    /// hosts together; a cycle across hosts counts once while it lasts).
    pub cycles_found: u64,
}

/// One lock: its holders and waiters on this host.
#[derive(Debug, Clone, Serialize)]
pub struct LockEntry {
    /// The lock's (or semaphore's) name.
    pub name: String,
    /// The engine it lives in (`memory`, `zookeeper`, `etcd`, ...): one host
    /// may serve plugins from several engines, whose names are apart.
    pub engine: &'static str,
    /// Who holds it, in grant order.
    pub holders: Vec<Party>,
    /// Who waits for it, in arrival order.
    pub waiters: Vec<Party>,
}

/// A holder or a waiter of one lock.
#[derive(Debug, Clone, Serialize)]
pub struct Party {
    /// The session's owner label: plugin and request or instance
    /// (`counter.wasm#3`).
    pub owner: String,
    /// `exclusive`, `shared`, or `permit` for a semaphore's.
    pub mode: &'static str,
    /// How long it has held or waited, in milliseconds.
    pub for_ms: u64,
    /// A holder's fencing token; `None` for a waiter.
    pub token: Option<u64>,
    /// 1-based place in its list (holders in grant order, waiters in
    /// arrival order).
    pub position: usize,
}

/// A wait-for cycle (a deadlock) found among this host's guests or across
/// hosts.
#[derive(Debug, Clone, Serialize)]
pub struct Cycle {
    /// `host`: among this host's guests, found when the closing wait was
    /// queued and broken at once; `hosts`: in the engine's data, involving
    /// another host's contender, found by the background scan (reported,
    /// not broken).
    pub scope: &'static str,
    /// The parties around the cycle: each waits for a lock the next one
    /// holds (the last for the first's).
    pub parties: Vec<String>,
    /// The lock each party waits for, in the same order.
    pub locks: Vec<String>,
    /// How long ago it was found, in milliseconds.
    pub found_ms_ago: u64,
    /// The owner whose wait was ended with `would-deadlock`; `None` for a
    /// cycle across hosts, which is only reported.
    pub broken: Option<String>,
}
